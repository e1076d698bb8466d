// tock's browser dashboard: a hash-routed page over the JSON API at /api/v1.
// Signing in (POST /ui/session) opens a session whose id, not the key, lives
// in an HttpOnly cookie; this script never sees either. Every change it sends
// carries X-Tock-CSRF: 1, without which the API refuses a cookie-authenticated
// change.
//
// Pages refresh in place: a refresh rebuilds a page's parts in memory and
// swaps in only those whose markup changed (morph), so the element that has
// the focus, a half-typed filter or an open confirmation stay as they are.
'use strict';

const STATUSES = ['scheduled', 'paused', 'completed', 'permanently_failed', 'cancelled', 'expired'];
const RUN_STATUSES = ['running', 'completed', 'failed', 'permanently_failed', 'skipped', 'aborted', 'expired'];
const BULK_ACTIONS = [['retry', 'Retry'], ['trigger', 'Run now'], ['pause', 'Pause'], ['resume', 'Resume'], ['cancel', 'Cancel']];
const NOTIFY_EVENTS = ['failed', 'permanently_failed', 'recovered', 'paused', 'completed', 'slo_breach', 'slo_recovered'];
const LIMIT_FIELDS = ['requests_per_minute', 'request_burst', 'jobs_per_minute', 'job_burst', 'max_active_jobs', 'occurrences_per_minute', 'occurrences_per_second', 'max_running'];
// The job types and an example payload of each, from GET /api/v1/job-types
// (the server's registered types), loaded once before the first page.
let TYPES = [];
let PAYLOADS = {};
const RUN_COLORS = {completed: '#2e7d32', failed: '#ef6c00', permanently_failed: '#c62828', running: '#1565c0', skipped: '#9e9e9e'};
const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

// What people call the fields the API names in its errors.
const FIELD_LABELS = {
  name: 'Name', type: 'Type', payload: 'Payload', run_at: 'Run at', delay: 'Delay', run_on: 'Run on',
  timezone: 'Time zone', schedule: 'Schedule', 'schedule.cron': 'Cron expression', 'schedule.rrule': 'RRULE',
  'schedule.every': 'Every', 'schedule.at': 'At', 'schedule.on': 'On', 'schedule.timezone': 'Time zone',
  'schedule.start_at': 'Starts', 'schedule.end_at': 'Ends', 'schedule.count': 'Count', 'schedule.misfire': 'Misfire policy',
  'schedule.misfire_max': 'Misfire bound', 'schedule.dst': 'Daylight saving', priority: 'Priority', max_retries: 'Max retries',
  timeout: 'Timeout', retention: 'Retention', history: 'History', labels: 'Labels', key: 'Key', expires_after: 'Expires after', jitter: 'Jitter',
  overlap: 'Overlap', from: 'From', to: 'To', notify: 'Alerts', 'notify.on': 'Alert events', 'notify.webhook.url': 'Alert webhook URL',
  'notify.slack': 'Alert Slack URL', 'notify.email': 'Alert addresses', 'notify.callback': 'Callback', 'notify.callback.url': 'Callback URL',
  owner: 'Owner', limits: 'Limits', ids: 'Jobs', filter: 'Filter',
  flow: 'Flow key', 'flow.key': 'Flow key', 'flow.concurrency': 'Flow concurrency', 'flow.rate': 'Flow rate',
  debounce: 'Debounce', 'debounce.key': 'Debounce key', 'debounce.window': 'Debounce window',
  skip_calendars: 'Skip calendars', dates: 'Dates', ranges: 'Ranges', rrules: 'Rules',
  slo: 'SLO', 'slo.late_after': 'Late after', 'slo.silent_after': 'Silent after', at_risk: 'At risk',
};

function fieldLabel(field) {
  if (!field) return '';
  if (FIELD_LABELS[field]) return FIELD_LABELS[field];
  // A list's item, "skip_calendars[1]", is named by its place: "Skip calendars, item 2".
  const item = field.match(/^([a-z_.]+)\[(\d+)\](?:\.(\w+))?$/);
  if (item) return `${fieldLabel(item[1])}, item ${Number(item[2]) + 1}${item[3] ? ' ' + item[3] : ''}`;
  if (field.startsWith('payload.')) return 'Payload ' + field.slice(8).replace(/_/g, ' ');
  if (field.startsWith('labels.')) return 'Label ' + field.slice(7);
  if (field.startsWith('limits.')) return field.slice(7).replace(/_/g, ' ');
  const i = field.lastIndexOf('.');
  return i > 0 && FIELD_LABELS[field.slice(0, i)] ? FIELD_LABELS[field.slice(0, i)] : field.replace(/_/g, ' ');
}

function errorText(err) {
  const label = fieldLabel(err.field);
  return label ? `${label}: ${err.message}` : (err.message || String(err));
}

let me = null;       // the signed-in user, from GET /api/v1/me
let timers = [];     // refreshes of the current page, stopped on navigation
let autoRefresh = true;  // the header's switch; kept for this page load only

// ---- DOM helpers: everything is built with createElement and textContent.

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVGNS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

function mount(...children) {
  const main = document.getElementById('main');
  main.replaceChildren(...children.flat().filter(Boolean));
}

// morph makes parent's children the given ones, keeping every old child
// whose markup is unchanged (and so its focus, its listeners, its state) and
// replacing only the others. A child with data-morph="children" and the
// same tag is kept and morphed one level down instead (a table body).
function morph(parent, children) {
  const next = children.flat().filter(Boolean);
  const old = [...parent.childNodes];
  const focusID = document.activeElement && document.activeElement.id;
  next.forEach((n, i) => {
    const o = old[i];
    if (!o) { parent.append(n); return; }
    if (o.nodeType === 1 && n.nodeType === 1 && o.tagName === n.tagName && n.dataset && n.dataset.morph === 'children') {
      for (const a of [...o.attributes]) if (!n.hasAttribute(a.name)) o.removeAttribute(a.name);
      for (const a of [...n.attributes]) if (o.getAttribute(a.name) !== a.value) o.setAttribute(a.name, a.value);
      morph(o, [...n.childNodes]);
      return;
    }
    if (o.nodeType === n.nodeType && (o.nodeType === 1 ? o.outerHTML === n.outerHTML : o.textContent === n.textContent)) return;
    parent.replaceChild(n, o);
  });
  for (const o of old.slice(next.length)) o.remove();
  // An element rebuilt under the focus gives it to its successor.
  if (focusID && document.activeElement === document.body) {
    const el = document.getElementById(focusID);
    if (el) el.focus();
  }
}

// every runs f every ms while auto-refresh is on, until the page changes.
function every(ms, f) {
  timers.push(setInterval(() => { if (autoRefresh && !document.hidden) f().catch(() => null); }, ms));
}

// confirmDialog asks before a destructive action, in a modal dialog the
// page's refreshes never touch; it resolves true on confirmation.
function confirmDialog(title, text, yes) {
  return new Promise((resolve) => {
    const dlg = document.getElementById('confirm');
    dlg.replaceChildren(
      h('h2', {id: 'confirm-title'}, title),
      h('p', {id: 'confirm-text'}, text),
      h('div', {class: 'actions'},
        h('button', {type: 'button', id: 'confirm-yes', class: 'danger', onclick: () => { dlg.close(); resolve(true); }}, yes),
        h('button', {type: 'button', id: 'confirm-no', onclick: () => { dlg.close(); resolve(false); }}, 'Keep it')));
    dlg.onclose = () => resolve(false);
    dlg.showModal();
    document.getElementById('confirm-no').focus();
  });
}

// ---- API

class APIError extends Error {
  constructor(status, detail) {
    super(detail.message || ('HTTP ' + status));
    this.status = status;
    this.code = detail.code;
    this.field = detail.field;
  }
}

async function api(method, path, body) {
  const opts = {method, credentials: 'same-origin', headers: {Accept: 'application/json'}};
  if (method !== 'GET') opts.headers['X-Tock-CSRF'] = '1';
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  if (r.status === 204) return null;
  const data = await r.json().catch(() => null);
  if (r.status === 401 && path.startsWith('/api/')) {
    me = null;
    toSignIn();
  }
  if (!r.ok) throw new APIError(r.status, (data && data.error) || {code: 'unknown', message: r.statusText});
  return data;
}

// toSignIn goes to the sign-in page, which comes back here afterwards.
function toSignIn() {
  const here = location.hash || '#/jobs';
  if (here.startsWith('#/signin')) return;
  location.hash = '#/signin?next=' + encodeURIComponent(here);
}

// ---- formatting

function pad(n, w = 2) { return String(n).padStart(w, '0'); }

// fmtTime shows an instant in the browser's zone: 2026-01-02 15:04:05.
function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function fmtMS(ms) {
  if (ms === null || ms === undefined) return '—';
  if (Math.abs(ms) < 1000) return Math.round(ms) + ' ms';
  if (Math.abs(ms) < 60000) return (ms / 1000).toFixed(1) + ' s';
  return (ms / 60000).toFixed(1) + ' min';
}

// fmtDuration shortens a Go duration as the API writes one: 10m0s is 10m,
// 36h0m0s is 36h.
function fmtDuration(d) { return (d || '').replace(/(\d)m0s$/, '$1m').replace(/(\d)h0m$/, '$1h'); }

// offsetISO writes a Date as RFC 3339 with the browser's offset, so that the
// server learns the instant the person meant and stores it in UTC.
function offsetISO(d) {
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? '+' : '-';
  const a = Math.abs(off);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${sign}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

// localInput is the value of a datetime-local input for a Date.
function localInput(d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// can reports whether the signed-in key has a scope (GET /api/v1/me lists
// them); isAdmin whether it acts as an administrator, which needs the admin
// role and, for a narrowed key, the admin scope.
function can(scope) { return !me || !me.scopes || me.scopes.includes(scope); }
function isAdmin() { return !!me && me.role === 'admin' && can('admin'); }

function badge(status) { return h('span', {class: 'badge st-' + status}, status.replace('_', ' ')); }

// sloTerms says what a job's slo asks: "starts within 500ms · completes at
// least every 10m".
function sloTerms(slo) {
  return [slo.late_after ? 'starts within ' + fmtDuration(slo.late_after) : null,
    slo.silent_after ? 'completes at least every ' + fmtDuration(slo.silent_after) : null].filter(Boolean).join(' · ');
}

// sloWhy says how a job's SLO is broken, from its slo_status.
function sloWhy(st) {
  return [st.late_since ? `late by ${fmtMS(st.late_by_ms)} since ${fmtTime(st.late_since)}` : null,
    st.silent_since ? `silent since ${fmtTime(st.silent_since)}` : null].filter(Boolean).join(' · ');
}

// sloBadge is a job's SLO as the scheduler's last check found it: red
// "SLO breached", saying how in its title, or "SLO ok".
function sloBadge(st) {
  return st.breached ? h('span', {class: 'badge slo-breached', title: sloWhy(st)}, 'SLO breached') : h('span', {class: 'badge slo-ok'}, 'SLO ok');
}

function errorBox(err) { return h('p', {class: 'error', role: 'alert'}, errorText(err)); }

function short(text, n) { return text && text.length > n ? text.slice(0, n - 1) + '…' : (text || ''); }

// wrap lets a wide table scroll inside itself, never the page.
function wrap(table) { return h('div', {class: 'table-wrap'}, table); }

// label names each cell of rows after its column (heads, by position), for
// a table of class "stack", which a phone shows as one card per row with
// each cell under its column's name (app.css). Labelled before morph, so
// that an unchanged row keeps its markup.
function label(rows, heads) {
  for (const tr of rows) [...tr.children].forEach((td, i) => { if (heads[i]) td.setAttribute('data-label', heads[i]); });
  return rows;
}

// ---- router

const routes = [
  [/^#\/signin/, signinPage],
  [/^#\/new$/, () => formPage(null)],
  [/^#\/jobs\/([0-9a-f-]{36})\/edit$/, (m) => formPage(m[1])],
  [/^#\/jobs\/([0-9a-f-]{36})$/, (m) => detailPage(m[1])],
  [/^#\/runs(\?.*)?$/, runsPage],
  [/^#\/dead-letters(\?.*)?$/, deadLettersPage],
  [/^#\/flows(\?.*)?$/, flowsPage],
  [/^#\/calendars(\?.*)?$/, calendarsPage],
  [/^#\/keys(\?.*)?$/, keysPage],
  [/^#\/users(\?.*)?$/, usersPage],
  [/^#\/audit(\?.*)?$/, auditPage],
  [/^#\/system$/, systemPage],
  [/^#\/jobs(\?.*)?$/, jobsPage],
];

// routeSeq counts navigations: a page still loading when the next one
// starts must not mount over it (alive).
let routeSeq = 0;

// alive, called first thing in a page, tells later whether that page is
// still the one shown.
function alive() { const s = routeSeq; return () => s === routeSeq; }

async function route() {
  const seq = ++routeSeq;
  timers.forEach(clearInterval);
  timers = [];
  const hash = location.hash || '#/jobs';
  if (!TYPES.length) {
    try {
      const kinds = (await api('GET', '/api/v1/job-types')).job_types;
      TYPES = kinds.map((k) => k.type);
      PAYLOADS = Object.fromEntries(kinds.map((k) => [k.type, k.example]));
    } catch (e) {
      mount(errorBox(e));
      return;
    }
  }
  if (!hash.startsWith('#/signin') && !me) {
    try {
      me = await api('GET', '/api/v1/me');
    } catch (e) {
      if (e.status !== 401) mount(errorBox(e));
      return;
    }
  }
  const top = document.getElementById('top');
  top.hidden = !me || hash.startsWith('#/signin');
  if (me) {
    document.getElementById('whoami').textContent = `${me.name} (${me.role}${can('jobs:write') ? '' : ', read-only key'})`;
    for (const id of ['nav-system', 'nav-users', 'nav-audit']) document.getElementById(id).hidden = !isAdmin();
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    const on = hash.startsWith('#/' + a.dataset.nav);
    a.classList.toggle('active', on);
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  if (seq !== routeSeq) return; // another navigation started meanwhile
  for (const [re, page] of routes) {
    const m = hash.match(re);
    if (m) {
      try {
        await page(m);
      } catch (e) {
        if (e.status !== 401 && seq === routeSeq) mount(errorBox(e));
      }
      return;
    }
  }
  location.hash = '#/jobs';
}

function query() {
  const i = location.hash.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : location.hash.slice(i + 1));
}

// go navigates to path with params, dropping the empty ones.
function go(path, params) {
  const p = new URLSearchParams();
  for (const [k, v] of params instanceof URLSearchParams ? params : Object.entries(params)) if (v) p.append(k, v);
  location.hash = path + (p.toString() ? '?' + p : '');
}

// pager links the pages of a keyset-paged list: the cursors that led here
// travel in "back", so "Previous" needs no cursor the API does not give.
function pager(path, q, nextCursor) {
  const back = q.get('back') ? q.get('back').split(',') : [];
  const link = (cursor, stack, text, id) => {
    const p = new URLSearchParams(q);
    p.delete('cursor');
    p.delete('back');
    if (cursor) p.set('cursor', cursor);
    if (stack.length) p.set('back', stack.join(','));
    return h('a', {href: path + (p.toString() ? '?' + p : ''), class: 'button', id}, text);
  };
  const cur = q.get('cursor') || '';
  return h('nav', {class: 'pager', 'aria-label': 'pages'},
    cur ? link(back[back.length - 1] || '', back.slice(0, -1), '« Previous', 'prev-page') : null,
    nextCursor ? link(nextCursor, [...back, cur], 'Next »', 'next-page') : null);
}

function pageSize(q, id) {
  return h('label', {class: 'inline'}, 'Per page ', h('select', {id, 'aria-label': 'page size', onchange: (ev) => {
    const p = new URLSearchParams(q);
    p.delete('cursor');
    p.delete('back');
    p.set('limit', ev.target.value);
    location.hash = location.hash.split('?')[0] + '?' + p;
  }}, ['20', '50', '100'].map((n) => h('option', {value: n, selected: (q.get('limit') || '20') === n}, n))));
}

// ---- sign-in

function signinPage() {
  const live = alive();
  const q = query();
  const next = q.get('next') && q.get('next').startsWith('#/') && !q.get('next').startsWith('#/signin') ? q.get('next') : '#/jobs';
  const failed = q.has('failed');
  const msg = h('p', {class: 'error', role: 'alert', hidden: !failed}, 'That key was not accepted.');
  const input = h('input', {type: 'password', name: 'key', id: 'key', autocomplete: 'current-password', required: true,
    placeholder: 'tock_… or the admin token'});
  const form = h('form', {method: 'post', action: '/ui/session', class: 'signin', id: 'signin-form', onsubmit: async (ev) => {
    ev.preventDefault();
    msg.hidden = true;
    try {
      await api('POST', '/ui/session', {key: input.value});
      me = null;
      location.hash = next;
    } catch (e) {
      msg.textContent = e.status === 401 ? 'That key was not accepted.' : errorText(e);
      msg.hidden = false;
    }
  }},
  h('h1', null, 'Sign in to tock'),
  h('label', {for: 'key'}, 'API key or admin token'),
  input,
  msg,
  h('button', {type: 'submit', id: 'signin'}, 'Sign in'),
  h('p', {class: 'hint'}, 'The key is not kept: this browser holds only a session, in an HttpOnly cookie, for 12 hours or until you sign out.'),
  h('p', {class: 'hint', id: 'token-hint'}, 'Started with make run? It printed the admin token and keeps it in .run/admin-token at the top of the checkout (',
    h('code', null, 'cat .run/admin-token'), '). Otherwise the admin token is the dashboard\'s TOCK_ADMIN_TOKEN, and an API key comes from an administrator (POST /api/v1/users/{id}/keys, or the Keys page).'));
  live() && mount(form);
  input.focus();
}

async function signOut() {
  await api('POST', '/ui/session/logout').catch(() => null);
  me = null;
  location.hash = '#/signin';
}

// ---- jobs list

function labelParams(text) {
  return (text || '').split(',').map((x) => x.trim()).filter(Boolean);
}

async function jobsPage() {
  const live = alive();
  const q = query();
  const admin = isAdmin();
  const params = new URLSearchParams();
  for (const k of ['q', 'status', 'type', 'owner', 'cursor']) if (q.get(k)) params.set(k, q.get(k));
  for (const l of labelParams(q.get('label'))) params.append('label', l);
  // The API lists the jobs at risk only without a label filter: each
  // control is disabled while the other is set.
  const atRisk = q.get('at_risk') === 'true';
  if (atRisk) params.set('at_risk', 'true');
  params.set('limit', q.get('limit') || '20');
  const users = admin ? await api('GET', '/api/v1/users?limit=500').catch(() => ({users: []})) : {users: []};
  const names = Object.fromEntries(users.users.map((u) => [u.id, u.name]));
  const selected = new Set();

  const select = (name, values, label) => h('select', {name, id: 'f-' + name, 'aria-label': label},
    h('option', {value: ''}, 'any ' + label),
    values.map(([v, text]) => h('option', {value: v, selected: q.get(name) === v}, text)));
  const labelIn = h('input', {type: 'search', name: 'label', id: 'f-label', placeholder: 'label: customer=1234', 'aria-label': 'labels, key=value, comma separated',
    value: q.get('label') || '', disabled: atRisk, oninput: (ev) => { riskIn.disabled = !!ev.target.value.trim(); }});
  const riskIn = h('input', {type: 'checkbox', name: 'at_risk', id: 'f-at_risk', value: 'true', checked: atRisk, disabled: !!q.get('label'),
    onchange: (ev) => { labelIn.disabled = ev.target.checked; }});
  const filters = h('form', {class: 'filters', id: 'filters', role: 'search', onsubmit: (ev) => {
    ev.preventDefault();
    const f = new URLSearchParams();
    for (const [k, v] of new FormData(ev.target)) if (v) f.set(k, v);
    if (q.get('limit')) f.set('limit', q.get('limit'));
    go('#/jobs', f);
  }},
  h('input', {type: 'search', name: 'q', id: 'f-q', placeholder: 'name or id', 'aria-label': 'name or id', value: q.get('q') || ''}),
  labelIn,
  h('label', {class: 'toggle', title: 'only the jobs whose SLO is broken now; not with a label filter'}, riskIn, ' at risk'),
  select('status', STATUSES.map((v) => [v, v.replace('_', ' ')]), 'status'),
  select('type', TYPES.map((v) => [v, v]), 'type'),
  admin ? select('owner', users.users.map((u) => [u.id, u.name]), 'owner') : null,
  h('select', {name: 'sort', id: 'f-sort', 'aria-label': 'order of this page'},
    h('option', {value: ''}, 'newest first'),
    h('option', {value: 'next_run', selected: q.get('sort') === 'next_run'}, 'next run first (this page)')),
  h('button', {type: 'submit', id: 'apply'}, 'Filter'));

  const totals = h('div', {class: 'totals', id: 'totals', 'aria-label': 'jobs by status'});
  const msg = h('div', {id: 'bulk-result', role: 'status'});
  const table = h('table', {class: 'jobs stack', id: 'jobs'});
  const pagerBox = h('div');
  const count = h('span', {id: 'selected-count'}, '0 selected');
  const action = h('select', {id: 'bulk-action', 'aria-label': 'bulk action'}, BULK_ACTIONS.map(([v, t]) => h('option', {value: v}, t)));

  // bulk acts on the selected jobs, or on everything the filter matches:
  // a dry run counts them first, and nothing happens until confirmed.
  const bulk = async (onFilter) => {
    msg.replaceChildren();
    const body = {action: action.value};
    if (onFilter) {
      body.filter = {};
      for (const k of ['status', 'type', 'q', 'owner']) if (q.get(k)) body.filter[k] = q.get(k);
      const labels = labelParams(q.get('label'));
      if (labels.length) body.filter.label = labels;
    } else {
      if (!selected.size) {
        msg.replaceChildren(h('p', {class: 'error', role: 'alert'}, 'Select some jobs first.'));
        return;
      }
      body.ids = [...selected];
    }
    try {
      const dry = await api('POST', '/api/v1/jobs:bulk', {...body, dry_run: true});
      const verb = BULK_ACTIONS.find(([v]) => v === body.action)[1];
      if (!dry.matched) {
        msg.replaceChildren(h('p', {class: 'hint'}, 'No job matches.'));
        return;
      }
      if (!await confirmDialog(`${verb} ${dry.matched} job${dry.matched === 1 ? '' : 's'}?`,
        onFilter ? 'Every job the current filter matches.' : 'The jobs you selected.', `${verb} ${dry.matched}`)) return;
      const res = await api('POST', '/api/v1/jobs:bulk', body);
      selected.clear();
      msg.replaceChildren(h('p', {class: 'ok', id: 'bulk-done'}, `${verb}: ${res.changed} changed, ${res.skipped.length} skipped.`),
        res.skipped.length ? h('ul', {class: 'skipped'}, res.skipped.slice(0, 20).map((x) => h('li', null, h('span', {class: 'id'}, x.id), ' ', x.reason))) : null);
      await draw();
    } catch (e) {
      msg.replaceChildren(errorBox(e));
    }
  };
  const bulkBar = h('div', {class: 'bulk', id: 'bulk'}, count, action,
    h('button', {type: 'button', id: 'bulk-selected', onclick: () => bulk(false)}, 'Apply to selected'),
    // A bulk filter has no at_risk: on that list, act on the jobs selected.
    h('button', {type: 'button', id: 'bulk-filter', onclick: () => bulk(true), disabled: atRisk,
      title: atRisk ? 'the at-risk filter cannot select jobs for a bulk action: select them instead' : null}, 'Apply to all matching'));

  const draw = async () => {
    const countParams = admin && q.get('owner') ? '?owner=' + encodeURIComponent(q.get('owner')) : '';
    const [list, counts] = await Promise.all([
      api('GET', '/api/v1/jobs?' + params),
      api('GET', '/api/v1/jobs:counts' + countParams).catch(() => null),
    ]);
    if (q.get('sort') === 'next_run') {
      list.jobs.sort((a, b) => (a.next_run_at || '9999').localeCompare(b.next_run_at || '9999'));
    }
    morph(totals, counts ? [h('a', {href: '#/jobs', class: 'total', 'data-status': 'all'}, `all ${counts.total}`),
      STATUSES.map((st) => h('a', {href: '#/jobs?status=' + st, class: 'total', 'data-status': st}, badge(st), ' ', String(counts.counts[st])))] : []);
    const rows = list.jobs.map((j) => {
      const err = j.last_run && j.last_run.error;
      return h('tr', {'data-id': j.id},
        h('td', null, h('input', {type: 'checkbox', class: 'pick', id: 'pick-' + j.id, 'aria-label': 'select ' + j.name, checked: selected.has(j.id),
          onchange: (ev) => { if (ev.target.checked) selected.add(j.id); else selected.delete(j.id); count.textContent = selected.size + ' selected'; }})),
        h('td', null, h('a', {href: '#/jobs/' + j.id, class: 'job-name'}, j.name), h('div', {class: 'id'}, j.id),
          Object.keys(j.labels || {}).length ? h('div', {class: 'labels'}, Object.entries(j.labels).map(([k, v]) => h('span', {class: 'label'}, `${k}=${v}`))) : null),
        h('td', null, badge(j.status), j.slo_status && j.slo_status.breached ? [' ', sloBadge(j.slo_status)] : null),
        h('td', null, j.type),
        h('td', null, j.schedule ? 'recurring' : 'one-off'),
        h('td', null, fmtTime(j.next_run_at)),
        h('td', {class: 'last-run'}, j.last_run ? [badge(j.last_run.status), ' ', fmtTime(j.last_run.started_at)] : '—',
          err ? h('div', {class: 'error-text last-error', title: err}, short(err, 90)) : null),
        admin ? h('td', null, names[j.owner] || j.owner.slice(0, 8)) : null);
    });
    const all = h('input', {type: 'checkbox', id: 'pick-all', 'aria-label': 'select every job on this page', onchange: (ev) => {
      for (const j of list.jobs) { if (ev.target.checked) selected.add(j.id); else selected.delete(j.id); }
      for (const cb of table.querySelectorAll('input.pick')) cb.checked = ev.target.checked;
      count.textContent = selected.size + ' selected';
    }});
    label(rows, ['', 'Job', 'Status', 'Type', 'Timing', 'Next run', 'Last outcome', 'Owner']);
    // data-query says which filters the rows answer, so a reader (or a test)
    // can tell the new list from the one it replaces.
    table.setAttribute('data-query', params.toString());
    morph(table, [
      h('thead', null, h('tr', null, h('th', null, all), h('th', null, 'Job'), h('th', null, 'Status'), h('th', null, 'Type'),
        h('th', null, 'Timing'), h('th', null, 'Next run'), h('th', null, 'Last outcome'), admin ? h('th', null, 'Owner') : null)),
      h('tbody', {'data-morph': 'children'}, rows.length ? rows : h('tr', null, h('td', {colspan: 8, class: 'empty'}, [...q.keys()].some((k) => k !== 'limit')
        ? [atRisk ? 'No job that matches has its SLO broken now. ' : 'No jobs match these filters. ', h('a', {href: '#/jobs'}, 'Show all jobs')]
        : ['No jobs yet. Create one with ', h('a', {href: '#/new'}, 'New job'), ', or with POST /api/v1/jobs (README, "Try it").'])))]);
    morph(pagerBox, [pager('#/jobs', q, list.next_cursor), pageSize(q, 'page-size')]);
  };
  await draw();
  live() && mount(h('div', {class: 'bar'}, h('h1', null, 'Jobs'), h('a', {href: '#/new', class: 'button primary'}, 'New job')),
    totals, filters, bulkBar, msg, wrap(table), pagerBox);
  every(5000, draw);
}

// ---- runs across jobs

async function runsPage() {
  const live = alive();
  const q = query();
  const admin = isAdmin();
  const params = new URLSearchParams();
  for (const k of ['status', 'type', 'job', 'q', 'owner', 'cursor']) if (q.get(k)) params.set(k, q.get(k));
  for (const k of ['since', 'until']) if (q.get(k)) params.set(k, new Date(q.get(k)).toISOString());
  for (const l of labelParams(q.get('label'))) params.append('label', l);
  params.set('limit', q.get('limit') || '50');

  const select = (name, values, label) => h('select', {name, id: 'r-' + name, 'aria-label': label},
    h('option', {value: ''}, 'any ' + label), values.map((v) => h('option', {value: v, selected: q.get(name) === v}, v.replace('_', ' '))));
  const filters = h('form', {class: 'filters', id: 'run-filters', role: 'search', onsubmit: (ev) => {
    ev.preventDefault();
    const f = new URLSearchParams();
    for (const [k, v] of new FormData(ev.target)) if (v) f.set(k, v);
    go('#/runs', f);
  }},
  h('input', {type: 'search', name: 'q', id: 'r-q', placeholder: 'error text', 'aria-label': 'error text', value: q.get('q') || ''}),
  select('status', RUN_STATUSES, 'status'),
  select('type', TYPES, 'type'),
  h('input', {type: 'search', name: 'label', id: 'r-label', placeholder: 'label: customer=1234', 'aria-label': 'labels', value: q.get('label') || ''}),
  h('label', {class: 'inline'}, 'From ', h('input', {type: 'datetime-local', name: 'since', id: 'r-since', step: 1, value: q.get('since') || ''})),
  h('label', {class: 'inline'}, 'to ', h('input', {type: 'datetime-local', name: 'until', id: 'r-until', step: 1, value: q.get('until') || ''})),
  q.get('job') ? h('input', {type: 'hidden', name: 'job', value: q.get('job')}) : null,
  admin && q.get('owner') ? h('input', {type: 'hidden', name: 'owner', value: q.get('owner')}) : null,
  h('button', {type: 'submit', id: 'run-apply'}, 'Search'));

  const table = h('table', {class: 'runs stack', id: 'all-runs'});
  const pagerBox = h('div');
  const draw = async () => {
    const list = await api('GET', '/api/v1/runs?' + params);
    table.setAttribute('data-query', params.toString());
    const rows = list.runs.map((r) => {
      const dur = r.finished_at ? new Date(r.finished_at) - new Date(r.started_at) : null;
      return h('tr', {class: 'run', 'data-status': r.status, 'data-job': r.job_id},
        h('td', null, h('a', {href: '#/jobs/' + r.job_id, class: 'job-name'}, r.job_name || r.job_id.slice(0, 8)), h('div', {class: 'id'}, r.job_type || '')),
        h('td', null, r.attempt), h('td', null, badge(r.status)), h('td', null, fmtTime(r.scheduled_for)),
        h('td', null, fmtTime(r.started_at)), h('td', null, fmtMS(r.lateness_ms)), h('td', null, dur === null ? 'running' : fmtMS(dur)),
        h('td', {class: 'output'}, r.error ? h('span', {class: 'error-text'}, r.error) : (r.output || '')));
    });
    const heads = ['Job', 'Attempt', 'Status', 'Scheduled for', 'Started', 'Lateness', 'Duration', 'Output / error'];
    label(rows, heads);
    morph(table, [h('thead', null, h('tr', null, heads.map((t) => h('th', null, t)))),
      h('tbody', {'data-morph': 'children'}, rows.length ? rows : h('tr', null, h('td', {colspan: 8, class: 'empty'},
        list.next_cursor ? 'None on this page: the search looked at 5,000 runs. Go on with Next.' : 'No runs match: widen the time range or clear the filters. A job\'s runs appear here once it is due.')))]);
    morph(pagerBox, [pager('#/runs', q, list.next_cursor), pageSize(q, 'run-page-size')]);
  };
  await draw();
  live() && mount(h('div', {class: 'bar'}, h('h1', null, 'Runs')), filters, wrap(table), pagerBox);
  if (!q.get('cursor')) every(5000, draw);
}

// ---- dead letters

// deadLettersPage lists the occurrences whose last attempt failed for good,
// with the run search's filters, and replays or purges the ones selected or
// every one the filter matches, after a dry run says how many.
async function deadLettersPage() {
  const live = alive();
  const q = query();
  const admin = isAdmin();
  const params = new URLSearchParams();
  for (const k of ['type', 'job', 'q', 'owner', 'cursor']) if (q.get(k)) params.set(k, q.get(k));
  for (const k of ['since', 'until']) if (q.get(k)) params.set(k, new Date(q.get(k)).toISOString());
  for (const l of labelParams(q.get('label'))) params.append('label', l);
  params.set('limit', q.get('limit') || '50');

  const filters = h('form', {class: 'filters', id: 'dead-filters', role: 'search', onsubmit: (ev) => {
    ev.preventDefault();
    const f = new URLSearchParams();
    for (const [k, v] of new FormData(ev.target)) if (v) f.set(k, v);
    go('#/dead-letters', f);
  }},
  h('input', {type: 'search', name: 'q', id: 'd-q', placeholder: 'error text', 'aria-label': 'error text', value: q.get('q') || ''}),
  h('select', {name: 'type', id: 'd-type', 'aria-label': 'type'}, h('option', {value: ''}, 'any type'),
    TYPES.map((v) => h('option', {value: v, selected: q.get('type') === v}, v))),
  h('input', {type: 'search', name: 'label', id: 'd-label', placeholder: 'label: customer=1234', 'aria-label': 'labels', value: q.get('label') || ''}),
  h('label', {class: 'inline'}, 'From ', h('input', {type: 'datetime-local', name: 'since', id: 'd-since', step: 1, value: q.get('since') || ''})),
  h('label', {class: 'inline'}, 'to ', h('input', {type: 'datetime-local', name: 'until', id: 'd-until', step: 1, value: q.get('until') || ''})),
  q.get('job') ? h('input', {type: 'hidden', name: 'job', value: q.get('job')}) : null,
  admin && q.get('owner') ? h('input', {type: 'hidden', name: 'owner', value: q.get('owner')}) : null,
  h('button', {type: 'submit', id: 'dead-apply'}, 'Search'));

  // The filter of a bulk action: the page's own, as the body names them.
  const bodyFilter = () => {
    const f = {};
    for (const k of ['type', 'job', 'q', 'owner']) if (q.get(k)) f[k] = q.get(k);
    for (const k of ['since', 'until']) if (q.get(k)) f[k] = new Date(q.get(k)).toISOString();
    const labels = labelParams(q.get('label'));
    if (labels.length) f.label = labels;
    return f;
  };
  const selected = new Set();
  const msg = h('div', {id: 'dead-msg', 'aria-live': 'polite'});
  const count = h('span', {id: 'dead-selected'}, 'none selected');
  const showCount = () => { count.textContent = selected.size ? `${selected.size} selected` : 'none selected'; };
  const act = async (action, onFilter) => {
    msg.replaceChildren();
    const body = onFilter ? {filter: bodyFilter()} : {ids: [...selected]};
    if (!onFilter && !selected.size) {
      msg.replaceChildren(h('p', {class: 'hint'}, 'Select dead letters first, or act on all matching.'));
      return;
    }
    const verb = action === 'replay' ? 'Replay' : 'Purge';
    try {
      const dry = await api('POST', `/api/v1/dead-letters:${action}`, {...body, dry_run: true});
      if (!dry.matched) {
        msg.replaceChildren(h('p', {class: 'hint'}, 'No dead letter matches.'));
        return;
      }
      const what = action === 'replay' ? 'Each runs once more, now, under its idempotency key.'
        : 'They leave this list; their runs stay in their jobs\' histories.';
      if (!await confirmDialog(`${verb} ${dry.matched} dead letter${dry.matched === 1 ? '' : 's'}?`,
        (onFilter ? 'Every dead letter the current filter matches. ' : 'The dead letters you selected. ') + what, `${verb} ${dry.matched}`)) return;
      const res = await api('POST', `/api/v1/dead-letters:${action}`, body);
      selected.clear();
      showCount();
      msg.replaceChildren(h('p', {class: 'ok', id: 'dead-done'}, `${verb}: ${res.changed} done, ${res.skipped.length} skipped.`),
        res.skipped.length ? h('ul', {class: 'skipped'}, res.skipped.slice(0, 20).map((x) => h('li', null, h('span', {class: 'id'}, x.id), ' ', x.reason))) : null);
      await draw();
    } catch (e) {
      msg.replaceChildren(errorBox(e));
    }
  };
  const writer = can('jobs:write');
  const bulkBar = writer ? h('div', {class: 'bulk', id: 'dead-bulk'}, count,
    h('button', {type: 'button', id: 'dead-replay-selected', onclick: () => act('replay', false)}, 'Replay selected'),
    h('button', {type: 'button', id: 'dead-purge-selected', onclick: () => act('purge', false)}, 'Purge selected'),
    h('button', {type: 'button', id: 'dead-replay-all', onclick: () => act('replay', true)}, 'Replay all matching'),
    h('button', {type: 'button', id: 'dead-purge-all', class: 'danger', onclick: () => act('purge', true)}, 'Purge all matching')) : null;

  const table = h('table', {class: 'runs', id: 'dead-letters'});
  const pagerBox = h('div');
  const draw = async () => {
    const list = await api('GET', '/api/v1/dead-letters?' + params);
    table.setAttribute('data-query', params.toString());
    const rows = list.dead_letters.map((r) => h('tr', {class: 'dead', 'data-id': r.id, 'data-job': r.job_id},
      writer ? h('td', null, h('input', {type: 'checkbox', 'aria-label': 'select ' + (r.job_name || r.job_id), checked: selected.has(r.id),
        onchange: (ev) => { if (ev.target.checked) selected.add(r.id); else selected.delete(r.id); showCount(); }})) : null,
      h('td', null, h('a', {href: '#/jobs/' + r.job_id, class: 'job-name'}, r.job_name || r.job_id.slice(0, 8)), h('div', {class: 'id'}, r.job_type || '')),
      h('td', null, fmtTime(r.scheduled_for)), h('td', null, r.attempt), h('td', null, fmtTime(r.finished_at)),
      h('td', {class: 'output'}, h('span', {class: 'error-text'}, r.error || '')),
      writer ? h('td', null, h('button', {type: 'button', class: 'link', onclick: async () => {
        try {
          const res = await api('POST', `/api/v1/dead-letters/${r.id}/replay`);
          msg.replaceChildren(h('p', {class: 'ok'}, `Replaying: attempt ${res.attempt}, due now.`));
        } catch (e) {
          msg.replaceChildren(errorBox(e));
        }
        await draw();
      }}, 'Replay')) : null));
    const heads = [writer ? '' : null, 'Job', 'Scheduled for', 'Last attempt', 'Failed', 'Error', writer ? '' : null].filter((t) => t !== null);
    morph(table, [h('thead', null, h('tr', null, heads.map((t) => h('th', null, t)))),
      h('tbody', {'data-morph': 'children'}, rows.length ? rows : h('tr', null, h('td', {colspan: heads.length, class: 'empty'},
        list.next_cursor ? 'None on this page: the search looked at 5,000 runs. Go on with Next.' : 'No dead letters: every occurrence that failed for good was replayed or purged.')))]);
    morph(pagerBox, [pager('#/dead-letters', q, list.next_cursor), pageSize(q, 'dead-page-size')]);
  };
  await draw();
  live() && mount(h('div', {class: 'bar'}, h('h1', null, 'Dead letters')),
    h('p', {class: 'hint'}, 'Occurrences whose last attempt failed for good (retries ran out, or dead-lettered after too many deliveries), until replayed or purged.'),
    filters, bulkBar, msg, wrap(table), pagerBox);
  if (!q.get('cursor')) every(5000, draw);
}

// ---- flow keys

// flowsPage lists the caller's flow keys with their limits and what each
// has in flight and waiting, refreshed every 2 s, and pauses or resumes
// one.
async function flowsPage() {
  const live = alive();
  const q = query();
  const params = new URLSearchParams();
  if (q.get('cursor')) params.set('cursor', q.get('cursor'));
  params.set('limit', q.get('limit') || '50');
  const writer = can('jobs:write');
  const msg = h('div', {id: 'flows-msg', 'aria-live': 'polite'});
  const table = h('table', {class: 'runs', id: 'flows'});
  const pagerBox = h('div');
  const draw = async () => {
    const list = await api('GET', '/api/v1/flows?' + params);
    const rows = list.flows.map((f) => h('tr', {class: 'flow', 'data-key': f.key},
      h('td', {class: 'job-name'}, f.key),
      h('td', null, f.concurrency ? String(f.concurrency) : '—'),
      h('td', null, f.rate || '—'),
      h('td', {class: 'in-flight'}, String(f.in_flight)),
      h('td', {class: 'waiting'}, String(f.waiting)),
      h('td', {class: 'state'}, f.paused ? h('span', {class: 'badge paused'}, 'paused') : 'running'),
      writer ? h('td', null, h('button', {type: 'button', class: 'link', id: 'flow-toggle-' + f.key, onclick: async () => {
        try {
          await api('POST', `/api/v1/flows/${encodeURIComponent(f.key)}/${f.paused ? 'resume' : 'pause'}`);
          msg.replaceChildren(h('p', {class: 'ok'}, `${f.key}: ${f.paused ? 'resumed' : 'paused'}.`));
        } catch (e) {
          msg.replaceChildren(errorBox(e));
        }
        await draw();
      }}, f.paused ? 'Resume' : 'Pause')) : null));
    const heads = ['Key', 'Concurrency', 'Rate', 'In flight', 'Waiting', 'State', writer ? '' : null].filter((t) => t !== null);
    morph(table, [h('thead', null, h('tr', null, heads.map((t) => h('th', null, t)))),
      h('tbody', {'data-morph': 'children'}, rows.length ? rows : h('tr', null, h('td', {colspan: heads.length, class: 'empty'},
        'No flow keys yet: a job with "flow": {"key": …} or PUT /api/v1/flows/{key} makes one.')))]);
    morph(pagerBox, [pager('#/flows', q, list.next_cursor), pageSize(q, 'flows-page-size')]);
  };
  await draw();
  live() && mount(h('div', {class: 'bar'}, h('h1', null, 'Flow keys')),
    h('p', {class: 'hint'}, 'Your own limits shared by every job that names the key: attempts in flight, starts per period, and a pause. What waits comes out in due order.'),
    msg, wrap(table), pagerBox);
  if (!q.get('cursor')) every(2000, draw);
}

// ---- calendars

// The lists of a calendar's form, one item a line: the API's field of each
// ("dates[3]") and how its error names it.
const CALENDAR_LISTS = {dates: 'Dates', ranges: 'Ranges', rrules: 'Rules'};

// calendarsPage lists the caller's calendars, the days, time ranges and
// RRULE days that the recurring jobs naming one in skip_calendars do not
// run on; ?name= shows one in full above the list. A writer creates or
// replaces one with the form (PUT replaces a calendar as a whole) and
// deletes one after a confirmation. The form is built once and never
// redrawn, so what is typed in it survives the list's 2 s refresh.
async function calendarsPage() {
  const live = alive();
  const q = query();
  const params = new URLSearchParams();
  if (q.get('cursor')) params.set('cursor', q.get('cursor'));
  params.set('limit', q.get('limit') || '50');
  const writer = can('jobs:write');
  const shown = q.get('name') || '';
  const msg = h('div', {id: 'calendars-msg', 'aria-live': 'polite'});
  const table = h('table', {class: 'runs stack', id: 'calendars'});
  const detail = h('div', {id: 'calendar-detail-box'});
  const pagerBox = h('div');
  const form = writer ? calendarForm(() => draw()) : null;

  const remove = async (c) => {
    if (!await confirmDialog(`Delete calendar ${c.name}?`,
      'It goes for good. A calendar that a job which can still run names in skip_calendars is not deleted.', 'Delete calendar')) return;
    msg.replaceChildren();
    try {
      await api('DELETE', '/api/v1/calendars/' + encodeURIComponent(c.name));
      msg.replaceChildren(h('p', {class: 'ok', id: 'calendar-deleted'}, `Calendar ${c.name} deleted.`));
    } catch (e) {
      msg.replaceChildren(h('p', {class: 'error', role: 'alert', id: 'calendars-error'}, `Could not delete ${c.name}: ${e.message}`));
    }
    await draw();
  };
  const count = (xs) => String((xs || []).length);
  const draw = async () => {
    const [list, one] = await Promise.all([
      api('GET', '/api/v1/calendars?' + params),
      shown ? api('GET', '/api/v1/calendars/' + encodeURIComponent(shown)).catch((e) => e) : null,
    ]);
    const rows = list.calendars.map((c) => h('tr', {class: 'calendar', 'data-name': c.name},
      h('td', null, h('a', {href: '#/calendars?name=' + encodeURIComponent(c.name), class: 'job-name'}, c.name)),
      h('td', null, c.timezone),
      h('td', {class: 'dates'}, count(c.dates)), h('td', {class: 'ranges'}, count(c.ranges)), h('td', {class: 'rrules'}, count(c.rrules)),
      h('td', null, fmtTime(c.updated_at)),
      writer ? h('td', null, h('div', {class: 'actions'},
        h('button', {type: 'button', class: 'edit-calendar', 'aria-label': 'edit calendar ' + c.name, onclick: () => form.load(c)}, 'Edit'),
        h('button', {type: 'button', class: 'danger delete-calendar', 'aria-label': 'delete calendar ' + c.name, onclick: () => remove(c)}, 'Delete'))) : null));
    const heads = ['Name', 'Time zone', 'Dates', 'Ranges', 'Rules', 'Updated', writer ? '' : null].filter((t) => t !== null);
    label(rows, heads);
    morph(table, [h('thead', null, h('tr', null, heads.map((t) => h('th', null, t)))),
      h('tbody', {'data-morph': 'children'}, rows.length ? rows : h('tr', null, h('td', {colspan: heads.length, class: 'empty'},
        writer ? 'No calendars yet: create one with the form below, or with PUT /api/v1/calendars/{name}.' : 'No calendars yet.')))]);
    morph(detail, shown ? [calendarDetail(shown, one, writer ? form : null)] : []);
    morph(pagerBox, [pager('#/calendars', q, list.next_cursor), pageSize(q, 'calendars-page-size')]);
  };
  await draw();
  live() && mount(h('div', {class: 'bar'}, h('h1', null, 'Calendars')),
    h('p', {class: 'hint'}, 'Your sets of days off: a recurring job that names a calendar in its skip calendars does not run on its dates, ',
      'inside its ranges, or on the days its rules fall on; each occurrence so skipped is recorded as a skipped run.'),
    detail, msg, wrap(table), pagerBox, form);
  if (!q.get('cursor')) every(2000, draw);
}

// calendarDetail shows one calendar in full (c, or the error reading it),
// with an Edit that loads it into the form when there is one.
function calendarDetail(name, c, form) {
  if (c instanceof Error) {
    return h('section', {id: 'calendar-detail'}, h('p', {class: 'error', role: 'alert'},
      c.status === 404 ? `You have no calendar named ${name}.` : errorText(c)));
  }
  const list = (xs, f) => (xs.length ? h('ul', {class: 'next'}, xs.map((x) => h('li', null, f(x)))) : 'none');
  return h('section', {id: 'calendar-detail', 'aria-labelledby': 'calendar-detail-title'},
    h('div', {class: 'bar'}, h('h2', {id: 'calendar-detail-title'}, 'Calendar ' + c.name),
      form ? h('button', {type: 'button', id: 'calendar-detail-edit', onclick: () => form.load(c)}, 'Edit') : null),
    h('dl', {class: 'facts'},
      h('dt', null, 'Time zone'), h('dd', null, c.timezone),
      h('dt', null, 'Dates'), h('dd', {id: 'calendar-dates'}, list(c.dates, (d) => d)),
      h('dt', null, 'Ranges'), h('dd', {id: 'calendar-ranges'}, list(c.ranges, (r) => `${r.from} → ${r.to}`)),
      h('dt', null, 'Rules'), h('dd', {id: 'calendar-rrules'}, list(c.rrules, (r) => r)),
      h('dt', null, 'Updated'), h('dd', null, fmtTime(c.updated_at), h('span', {class: 'hint'}, ' · created ' + fmtTime(c.created_at)))));
}

// calendarForm is the form that creates or replaces a calendar: its lists
// are one item a line, a range being its from and to instants. An error
// shows under the field it names, "dates[1]" as the line of the dates it
// came from. load(c) fills it with a calendar, to change it.
function calendarForm(redraw) {
  const general = h('p', {class: 'error', role: 'alert', id: 'calendar-form-error', hidden: true});
  const msg = h('div', {id: 'calendar-form-status', 'aria-live': 'polite'});
  const inputs = {};
  const row = (key, text, input, hint) => {
    const id = input.id;
    inputs[key] = input;
    input.setAttribute('aria-describedby', id + '-hint');
    return h('div', {class: 'row', 'data-field': key}, h('label', {for: id}, text), input,
      h('span', {class: 'hint', id: id + '-hint'}, hint),
      h('span', {class: 'field-error', id: id + '-error', hidden: true}));
  };
  const area = (id, rows, placeholder) => h('textarea', {id, name: id, rows, spellcheck: 'false', placeholder});
  const defaultZone = browserZone;
  const fields = [
    row('name', 'Name', h('input', {id: 'cal-name', name: 'name', required: true, autocomplete: 'off', placeholder: 'de-holidays'}),
      'a-z, 0-9, _, . and -; a name you have already replaces that calendar as a whole'),
    row('timezone', 'Time zone', h('input', {id: 'cal-timezone', name: 'timezone', list: 'cal-zones', value: defaultZone}),
      'the zone its dates and rule days are days in'),
    h('datalist', {id: 'cal-zones'}, (Intl.supportedValuesOf ? Intl.supportedValuesOf('timeZone') : [defaultZone]).map((z) => h('option', {value: z}))),
    row('dates', 'Dates', area('cal-dates', 4, '2026-12-25\n2026-12-26'), 'one day a line, YYYY-MM-DD'),
    row('ranges', 'Ranges', area('cal-ranges', 3, '2026-12-31T22:00:00Z 2027-01-01T02:00:00Z'),
      'one a line: from and to (excluded), RFC 3339 instants with their offset, separated by a space'),
    row('rrules', 'Rules', area('cal-rrules', 2, 'FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1'),
      'one RRULE a line: the days it has an occurrence on are off')];

  // lines reads a list field: its non-empty lines and the line number of each.
  const lines = (key) => inputs[key].value.split('\n').map((text, i) => ({text: text.trim(), line: i + 1})).filter((l) => l.text);
  const clear = () => {
    general.hidden = true;
    for (const input of Object.values(inputs)) {
      input.removeAttribute('aria-invalid');
      input.setAttribute('aria-describedby', input.id + '-hint');
      form.querySelector('#' + input.id + '-error').hidden = true;
    }
  };
  // showError puts err under its field: "dates[1]" on the dates, naming the
  // line the second date came from; anything else in the general box.
  const showError = (err, read) => {
    let key = err.field || '';
    let text = errorText(err);
    const m = key.match(/^(dates|ranges|rrules)\[(\d+)\](?:\.(from|to))?$/);
    if (m) {
      key = m[1];
      const l = read[key][Number(m[2])];
      text = `${CALENDAR_LISTS[key]}, line ${l ? l.line : Number(m[2]) + 1}${m[3] ? ` (${m[3]})` : ''}: ${err.message}`;
    }
    const input = inputs[key];
    if (!input) {
      general.textContent = text;
      general.hidden = false;
      return;
    }
    const box = form.querySelector('#' + input.id + '-error');
    box.textContent = text;
    box.hidden = false;
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-describedby', `${input.id}-error ${input.id}-hint`);
  };
  const form = h('form', {id: 'calendar-form', class: 'job-form', novalidate: true, 'aria-labelledby': 'calendar-form-title', onsubmit: async (ev) => {
    ev.preventDefault();
    clear();
    msg.replaceChildren();
    const read = {dates: lines('dates'), ranges: lines('ranges'), rrules: lines('rrules')};
    try {
      const name = inputs.name.value.trim();
      if (!name) throw new APIError(400, {field: 'name', message: 'is required'});
      const body = {timezone: inputs.timezone.value.trim() || 'UTC', dates: read.dates.map((l) => l.text), rrules: read.rrules.map((l) => l.text)};
      body.ranges = read.ranges.map((l, i) => {
        const parts = l.text.split(/\s+/).filter((p) => !['to', '→', '-', '–'].includes(p));
        if (parts.length !== 2) throw new APIError(400, {field: `ranges[${i}]`, message: 'write its from and to, separated by a space'});
        return {from: parts[0], to: parts[1]};
      });
      const c = await api('PUT', '/api/v1/calendars/' + encodeURIComponent(name), body);
      form.reset();
      inputs.timezone.value = defaultZone;
      msg.replaceChildren(h('p', {class: 'ok', id: 'calendar-saved'},
        `Calendar ${c.name} ${c.created_at === c.updated_at ? 'created' : 'replaced'}: ${c.dates.length} dates, ${c.ranges.length} ranges, ${c.rrules.length} rules.`));
      await redraw();
    } catch (e) {
      showError(e, read);
    }
  }},
  h('h2', {id: 'calendar-form-title'}, 'Create or replace a calendar'),
  fields, general, msg,
  h('div', {class: 'actions'}, h('button', {type: 'submit', id: 'calendar-save', class: 'primary'}, 'Save calendar'),
    h('button', {type: 'button', id: 'calendar-clear', onclick: () => { form.reset(); inputs.timezone.value = defaultZone; clear(); }}, 'Clear')));
  form.load = (c) => {
    clear();
    inputs.name.value = c.name;
    inputs.timezone.value = c.timezone;
    inputs.dates.value = c.dates.join('\n');
    inputs.ranges.value = c.ranges.map((r) => `${r.from} ${r.to}`).join('\n');
    inputs.rrules.value = c.rrules.join('\n');
    inputs.name.focus();
    form.scrollIntoView({block: 'start'});
  };
  return form;
}

// ---- job detail

async function detailPage(id) {
  const live = alive();
  const view = h('div', {id: 'detail'});
  const msg = h('p', {class: 'error', role: 'alert', id: 'detail-error', hidden: true});
  live() && mount(msg, view);
  const runCursors = [''];   // the cursor of each run page reached, for Newer/Older
  // The backfill form's fields and the outcome of its last action, kept
  // here so that a refresh rebuilds the form as it was. It starts on the
  // last 24 hours, up to the start of this one.
  const hour = new Date();
  hour.setMinutes(0, 0, 0);
  const backfill = {from: localInput(new Date(hour - 86400000)), to: localInput(hour), overlap: '', error: null, done: ''};
  let recurring = true;     // until the job says otherwise: a one-off job has no backfills
  const show = (e) => { msg.textContent = errorText(e); msg.hidden = false; };
  const act = async (method, path, body) => {
    msg.hidden = true;
    try {
      await api(method, path, body);
      await draw();
    } catch (e) {
      show(e);
    }
  };
  const draw = async () => {
    const cursor = runCursors[runCursors.length - 1];
    const [j, next, runs, backfills] = await Promise.all([
      api('GET', '/api/v1/jobs/' + id),
      api('GET', `/api/v1/jobs/${id}/next?n=10`).catch(() => ({next: []})),
      api('GET', `/api/v1/jobs/${id}/runs?limit=50` + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')),
      recurring ? api('GET', `/api/v1/jobs/${id}/backfills`).catch(() => null) : null,
    ]);
    recurring = !!j.schedule;
    morph(view, detailView(j, next, runs, backfills && backfills.backfills, {act, runCursors, draw, backfill}));
  };
  await draw();
  every(2000, draw);
}

// SKIPPED_SHOWN bounds the skipped occurrences a list of next runs shows.
const SKIPPED_SHOWN = 10;

// upcomingItems lists next runs with the occurrences calendars skip among
// them, in time order: a run numbered, a skipped one struck out with a
// "skipped" badge and its reason, unnumbered. here adds each run's time in
// the browser's zone.
function upcomingItems(next, skipped, here) {
  const all = [...next.map((n) => ({...n, run: true})), ...skipped].sort((a, b) => Date.parse(a.utc) - Date.parse(b.utc));
  const items = [];
  let runs = 0;
  let shown = 0;
  for (const x of all) {
    if (x.run) {
      items.push(h('li', {value: ++runs, 'data-utc': x.utc}, x.at, here ? h('span', {class: 'hint'}, ' · ' + fmtTime(x.utc) + ' here') : null));
    } else if (shown < SKIPPED_SHOWN) {
      shown++;
      items.push(h('li', {class: 'next-skipped', 'data-utc': x.utc}, h('s', null, x.at), ' ', badge('skipped'),
        h('div', {class: 'reason'}, x.reason)));
    }
  }
  if (skipped.length > shown) items.push(h('li', {class: 'more-skipped hint'}, `and ${skipped.length - shown} more skipped`));
  if (!next.length) items.unshift(h('li', {class: 'empty'}, skipped.length ? 'none: its calendars skip each of the next occurrences' : 'none'));
  return items;
}

// detailView is a job's page; upcoming is GET /jobs/{id}/next's answer:
// the next runs, and the occurrences its calendars skip among them.
function detailView(j, upcoming, runs, backfills, ctl) {
  const next = upcoming.next || [];
  const skipped = upcoming.skipped || [];
  const live = j.status === 'scheduled' || j.status === 'paused';
  const button = (label, id, onclick, cls) => h('button', {type: 'button', id, class: cls, onclick}, label);
  const cancel = button('Cancel job', 'cancel', async () => {
    if (await confirmDialog(`Cancel ${j.name}?`, j.schedule ? 'It will not run again.' : 'It will not run.', 'Cancel job')) {
      await ctl.act('DELETE', '/api/v1/jobs/' + j.id);
    }
  }, 'danger');
  const actions = h('div', {class: 'actions', id: 'actions'},
    live ? h('a', {href: `#/jobs/${j.id}/edit`, class: 'button', id: 'edit'}, 'Edit') : null,
    live ? button('Run now', 'trigger', () => ctl.act('POST', `/api/v1/jobs/${j.id}/trigger`)) : null,
    j.status === 'scheduled' ? button('Pause', 'pause', () => ctl.act('POST', `/api/v1/jobs/${j.id}/pause`)) : null,
    j.status === 'paused' ? button('Resume', 'resume', () => ctl.act('POST', `/api/v1/jobs/${j.id}/resume`)) : null,
    live ? cancel : null,
    h('a', {href: '#/runs?job=' + j.id, class: 'button', id: 'job-runs'}, 'Search its runs'));

  const sched = j.schedule || {};
  const timing = j.schedule
    ? [h('dt', null, 'Schedule'), h('dd', {id: 'schedule'}, sched.cron ? `cron ${sched.cron}` : sched.rrule ? `RRULE ${sched.rrule}` : `every ${sched.every}${sched.at ? ' at ' + sched.at : ''}${sched.on !== undefined ? ' on ' + sched.on : ''}`,
      h('div', {class: 'hint'}, [sched.start_at ? 'from ' + fmtTime(sched.start_at) : null, sched.end_at ? 'until ' + fmtTime(sched.end_at) : null,
        sched.count ? `${sched.count} times` : null, `misfire ${sched.misfire || 'run_once'}${sched.misfire_max ? ' (' + sched.misfire_max + ')' : ''}`,
        sched.dst ? `DST gap ${sched.dst.gap || 'shift'}, overlap ${sched.dst.overlap || 'first'}` : null, j.overlap ? 'overlap ' + j.overlap : null].filter(Boolean).join(' · ')))]
    : [h('dt', null, 'Runs at'), h('dd', {id: 'run-at'}, fmtTime(j.run_at), ' ', h('span', {class: 'hint'}, `(${browserZone}); ${j.run_at} UTC`))];
  const labels = Object.entries(j.labels || {});
  const facts = h('dl', {class: 'facts'},
    h('dt', null, 'Status'), h('dd', {id: 'status'}, badge(j.status), j.paused_reason ? ' ' + j.paused_reason : ''),
    j.slo ? [h('dt', null, 'SLO'), h('dd', {id: 'slo'}, h('span', {id: 'slo-terms'}, sloTerms(j.slo)), ' ',
      j.slo_status ? sloBadge(j.slo_status) : h('span', {class: 'hint'}, 'not checked yet'),
      j.slo_status && j.slo_status.breached ? h('div', {class: 'error-text', id: 'slo-why'}, sloWhy(j.slo_status)) : null)] : null,
    h('dt', null, 'Type'), h('dd', null, j.type),
    h('dt', null, 'Id'), h('dd', {class: 'id'}, j.id),
    j.key ? [h('dt', null, 'Key'), h('dd', {id: 'key-value'}, j.key)] : null,
    labels.length ? [h('dt', null, 'Labels'), h('dd', {class: 'labels'}, labels.map(([k, v]) => h('a', {class: 'label', href: '#/jobs?label=' + encodeURIComponent(`${k}=${v}`)}, `${k}=${v}`)))] : null,
    ...timing,
    h('dt', null, 'Time zone'), h('dd', null, j.timezone),
    (j.skip_calendars || []).length ? [h('dt', null, 'Skip calendars'), h('dd', {id: 'skip-calendars'},
      j.skip_calendars.flatMap((c, i) => [i ? ', ' : null, h('a', {href: '#/calendars?name=' + encodeURIComponent(c)}, c)]),
      h('div', {class: 'hint'}, 'not run on the days of these calendars'))] : null,
    h('dt', null, 'Next run'), h('dd', {id: 'next-run'}, j.status === 'paused' ? 'none while paused: resume it to run again' : fmtTime(j.next_run_at),
      j.status !== 'paused' && j.next_run_at && skipped.some((x) => Date.parse(x.utc) === Date.parse(j.next_run_at))
        ? h('span', {class: 'hint'}, ' (its calendars skip it: see Next runs)') : null),
    h('dt', null, 'Retries, timeout, priority'), h('dd', null, `${j.max_retries}, ${j.timeout}, ${j.priority}`),
    j.expires_after ? [h('dt', null, 'Expires after'), h('dd', null, j.expires_after)] : null,
    j.jitter ? [h('dt', null, 'Jitter'), h('dd', {id: 'jitter'}, `up to ${j.jitter} after each nominal time (the next run above includes it)`)] : null,
    j.flow ? [h('dt', null, 'Flow key'), h('dd', {id: 'flow'}, h('a', {href: '#/flows'}, j.flow.key),
      [j.flow.concurrency ? ` · ${j.flow.concurrency} at once` : '', j.flow.rate ? ` · ${j.flow.rate}` : ''].join(''))] : null,
    j.debounce ? [h('dt', null, 'Debounce'), h('dd', {id: 'debounce'}, `${j.debounce.key}, window ${j.debounce.window}`)] : null,
    h('dt', null, 'Kept'), h('dd', null, `${j.retention || 'the default retention'}; history ${j.history}`),
    j.notify ? [h('dt', null, 'Alerts'), h('dd', {id: 'notify'}, `${j.notify.on.join(', ')} → ${j.notify.webhook ? 'webhook ' + j.notify.webhook.url
      : j.notify.callback ? 'callback ' + j.notify.callback.url : j.notify.slack ? 'Slack' : 'email ' + j.notify.email.to.join(', ')}`)] : null,
    h('dt', null, 'Payload'), h('dd', null, h('pre', {id: 'payload'}, JSON.stringify(j.payload, null, 2))));

  const nextList = h('ol', {class: 'next', id: 'next-runs'}, upcomingItems(next, skipped, true));

  // Runs come newest first: the first row of an occurrence is its last attempt,
  // the one a retry follows.
  const seen = new Set();
  const runRows = runs.runs.map((r) => {
    const dur = r.finished_at ? new Date(r.finished_at) - new Date(r.started_at) : null;
    const last = !seen.has(r.scheduled_for);
    seen.add(r.scheduled_for);
    const retry = last && r.status === 'permanently_failed' && j.status !== 'cancelled' && j.status !== 'paused'
      ? h('button', {type: 'button', class: 'retry', id: 'retry-' + r.id, onclick: () => ctl.act('POST', `/api/v1/jobs/${j.id}/retry`, {scheduled_for: r.scheduled_for})}, 'Retry')
      : null;
    return h('tr', {class: 'run', 'data-status': r.status, 'data-attempt': r.attempt, 'data-key': r.id},
      h('td', null, r.attempt), h('td', null, badge(r.status), retry ? ' ' : null, retry), h('td', null, fmtTime(r.scheduled_for)),
      h('td', null, fmtTime(r.started_at)), h('td', null, fmtMS(r.lateness_ms)), h('td', null, dur === null ? 'running' : fmtMS(dur)),
      h('td', {class: 'output'}, r.error ? h('span', {class: 'error-text'}, r.error) : (r.output || '')));
  });
  const runHeads = ['Attempt', 'Status', 'Scheduled for', 'Started', 'Lateness', 'Duration', 'Output / error'];
  label(runRows, runHeads);
  const runTable = h('table', {class: 'runs stack', id: 'runs'},
    h('thead', null, h('tr', null, runHeads.map((t) => h('th', null, t)))),
    h('tbody', {'data-morph': 'children'}, runRows.length ? runRows : h('tr', null, h('td', {colspan: 7, class: 'empty'},
      j.status === 'scheduled' ? 'No runs yet: the first comes at the next run above; Run now starts one at once.' : 'No runs.'))));
  const c = ctl.runCursors;
  const runPager = h('nav', {class: 'pager', 'aria-label': 'run pages'},
    c.length > 1 ? h('button', {type: 'button', id: 'newer-runs', onclick: () => { c.pop(); ctl.draw(); }}, '« Newer runs') : null,
    runs.next_cursor ? h('button', {type: 'button', id: 'older-runs', onclick: () => { c.push(runs.next_cursor); ctl.draw(); }}, 'Older runs »') : null);

  return [h('div', {class: 'bar'}, h('h1', {id: 'job-title'}, j.name), actions),
    h('div', {class: 'cols'}, h('section', null, facts), h('section', null, h('h2', null, 'Next runs'),
      j.status === 'paused' && next.length ? h('p', {class: 'hint', id: 'paused-next'}, 'Paused: these run only once you resume it.') : null,
      skipped.length ? h('p', {class: 'hint', id: 'skipped-next'}, 'Struck out: occurrences that fall on a day of its calendars, recorded as skipped runs instead.') : null,
      nextList)),
    backfillSection(j, backfills, ctl),
    h('h2', null, 'Run history'), h('div', {class: 'table-wrap', 'data-morph': 'children'}, runTable), runPager];
}

// backfillSection is a recurring job's backfills: a form that runs the
// occurrences of a past range that never ran, and the progress of each
// backfill, newest first, with Cancel on a running one. The page's refresh
// redraws it, so progress moves while one runs. The form's values and its
// last outcome live in ctl.backfill, from which every refresh rebuilds it.
// As elsewhere, a read-only key sees the list without the controls.
function backfillSection(j, backfills, ctl) {
  if (!j.schedule) return null;
  const st = ctl.backfill;
  const writer = can('jobs:write');
  const canStart = writer && j.status === 'scheduled';
  const list = backfills || [];
  if (!canStart && !list.length && !(writer && j.status === 'paused')) return null;
  const redraw = () => ctl.draw().catch(() => null);

  const invalid = (field) => (st.error && st.error.field === field ? 'true' : null);
  const when = (field, text) => h('label', {class: 'inline'}, text + ' ',
    h('input', {type: 'datetime-local', id: 'backfill-' + field, name: field, step: 1, required: true, value: st[field],
      'aria-invalid': invalid(field), 'aria-describedby': invalid(field) ? 'backfill-error' : 'backfill-hint',
      oninput: (ev) => { st[field] = ev.target.value; }}));
  const form = h('form', {class: 'filters', id: 'backfill-form', novalidate: true, 'aria-label': 'backfill', onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    Object.assign(st, {from: f.from.value, to: f.to.value, overlap: f.overlap.value, error: null, done: ''});
    try {
      const body = {};
      for (const k of ['from', 'to']) {
        const d = new Date(st[k]);
        if (!st[k] || isNaN(d)) throw new APIError(400, {field: k, message: 'pick a date and time'});
        body[k] = offsetISO(d);
      }
      if (st.overlap) body.overlap = st.overlap;
      const b = await api('POST', `/api/v1/jobs/${j.id}/backfill`, body);
      st.done = `Backfill started: ${b.total} occurrence${b.total === 1 ? '' : 's'} in the range.`;
    } catch (e) {
      st.error = e;
    }
    await redraw();
  }},
  when('from', `From (${browserZone} time)`), when('to', 'to (excluded)'),
  h('label', {class: 'inline'}, 'Overlap ', h('select', {id: 'backfill-overlap', name: 'overlap', 'aria-invalid': invalid('overlap'),
    onchange: (ev) => { st.overlap = ev.target.value; }},
  [['', `the job's policy (${j.overlap || 'allow'})`], ['allow', 'allow'], ['skip', 'skip'], ['buffer_one', 'buffer one']]
    .map(([v, t]) => h('option', {value: v, selected: st.overlap === v}, t)))),
  h('button', {type: 'submit', id: 'backfill-submit', class: 'primary'}, 'Backfill'));

  const progress = (b) => `${b.queued} of ${b.total} queued · ${b.running} running · ${b.completed} completed · ` +
    `${b.failed} failed · ${b.skipped} skipped · ${b.existing} already ran`;
  const rows = list.map((b) => h('tr', {class: 'backfill', 'data-id': b.id, 'data-status': b.status},
    h('td', null, `${fmtTime(b.from)} → ${fmtTime(b.to)}`, h('div', {class: 'hint'}, 'overlap ' + b.overlap.replace('_', ' '))),
    h('td', null, badge(b.status), b.reason ? h('div', {class: 'hint'}, b.reason) : null),
    h('td', {class: 'progress'}, progress(b), b.remaining ? h('div', {class: 'hint'}, `${b.remaining} not reached yet`) : null),
    h('td', null, fmtTime(b.created_at)), h('td', null, fmtTime(b.finished_at)),
    writer ? h('td', null, b.status === 'running' ? h('button', {type: 'button', class: 'danger', id: 'cancel-backfill-' + b.id,
      'aria-label': `cancel the backfill from ${fmtTime(b.from)}`, onclick: async () => {
        if (!await confirmDialog('Cancel this backfill?', 'Nothing more of it is queued; a run already started ends as it would.', 'Cancel backfill')) return;
        Object.assign(st, {error: null, done: ''});
        try {
          await api('DELETE', '/api/v1/backfills/' + b.id);
          st.done = 'Backfill cancelled.';
        } catch (e) {
          st.error = e;
        }
        await redraw();
      }}, 'Cancel') : null) : null));
  const heads = ['Range', 'Status', 'Progress', 'Started', 'Finished', writer ? '' : null].filter((t) => t !== null);
  label(rows, heads);
  const table = h('table', {class: 'runs stack', id: 'backfills', 'data-morph': 'children'},
    h('thead', null, h('tr', null, heads.map((t) => h('th', null, t)))),
    h('tbody', {'data-morph': 'children'}, rows.length ? rows : h('tr', null, h('td', {colspan: heads.length, class: 'empty'}, 'No backfills yet.'))));

  const fieldError = st.error && ['from', 'to', 'overlap'].includes(st.error.field);
  return h('section', {id: 'backfill', 'aria-labelledby': 'backfill-title', 'data-morph': 'children'},
    h('h2', {id: 'backfill-title'}, 'Backfill'),
    h('p', {class: 'hint', id: 'backfill-hint'}, `Runs the occurrences whose nominal times fall in a past range and that never ran; `,
      `those that ran already are left alone. Times are in your time zone, ${browserZone}.`),
    canStart ? form : writer && j.status === 'paused' ? h('p', {class: 'hint', id: 'backfill-paused'}, 'Resume the job to backfill it: only a scheduled job can be.') : null,
    h('div', {id: 'backfill-msg', 'aria-live': 'polite', 'data-morph': 'children'},
      st.error ? h('p', {class: fieldError ? 'field-error' : 'error', id: 'backfill-error'}, errorText(st.error)) : null,
      st.done ? h('p', {class: 'ok', id: 'backfill-done'}, st.done) : null),
    h('div', {class: 'table-wrap', 'data-morph': 'children'}, table));
}

// ---- create and edit

// The form's fields, read into a job body (a POST's) or compared against the
// job as it was (a PATCH sends only what changed).
async function formPage(id) {
  const live = alive();
  const [j, cals] = await Promise.all([id ? api('GET', '/api/v1/jobs/' + id) : null,
    api('GET', '/api/v1/calendars?limit=100').catch(() => null)]);
  const admin = isAdmin();
  const sched = (j && j.schedule) || {};
  const recurring = !!(j && j.schedule);

  const fieldErr = (field) => h('span', {class: 'field-error', 'data-error-for': field, role: 'alert', hidden: true});
  const row = (label, field, input, hint) => h('div', {class: 'row', 'data-field': field},
    h('label', {for: input.id}, label), input, hint ? h('span', {class: 'hint'}, hint) : null, fieldErr(field));
  const text = (id, value, attrs) => h('input', {id, name: id, value: value === undefined || value === null ? '' : String(value), ...attrs});
  const choice = (id, options, value) => h('select', {id, name: id}, options.map(([v, t]) => h('option', {value: v, selected: v === (value || '')}, t)));

  const name = text('name', j ? j.name : '', {required: true});
  const type = h('select', {id: 'type', name: 'type', disabled: !!j}, TYPES.map((t) => h('option', {value: t, selected: j ? j.type === t : t === 'webhook'}, t)));
  const payload = h('textarea', {id: 'payload', name: 'payload', rows: 7, spellcheck: 'false'});
  payload.value = JSON.stringify(j ? j.payload : PAYLOADS.webhook, null, 2);
  let payloadTouched = !!j;
  payload.addEventListener('input', () => { payloadTouched = true; });
  type.addEventListener('change', () => { if (!payloadTouched) payload.value = JSON.stringify(PAYLOADS[type.value], null, 2); });

  // When: a one-off time (a date-time, a delay, or a day in a zone), or a
  // recurrence (cron, RRULE or every) with its bounds and policies.
  const kindOneoff = h('input', {type: 'radio', name: 'kind', id: 'kind-oneoff', value: 'oneoff', checked: !recurring});
  const kindRecurring = h('input', {type: 'radio', name: 'kind', id: 'kind-recurring', value: 'recurring', checked: recurring});
  const soon = new Date(Date.now() + 60000);
  soon.setMilliseconds(0);
  const oneoffHow = choice('oneoff-how', [['at', 'at a date and time'], ['delay', 'after a delay'], ['run_on', 'on a day (local midnight)']], 'at');
  const runAt = h('input', {type: 'datetime-local', id: 'run_at', name: 'run_at', step: 1, value: localInput(j && j.run_at ? new Date(j.run_at) : soon)});
  const delay = text('delay', '', {placeholder: '90s, 2h30m, 15d'});
  const runOn = h('input', {type: 'date', id: 'run_on', name: 'run_on'});
  const ruleKind = choice('rule-kind', [['cron', 'cron'], ['rrule', 'RRULE'], ['every', 'every day/week/month']], sched.rrule ? 'rrule' : sched.every ? 'every' : 'cron');
  const expr = text('expr', sched.rrule || sched.cron || '', {placeholder: '*/5 * * * *'});
  const everyUnit = choice('every', [['day', 'day'], ['week', 'week'], ['month', 'month']], sched.every || 'day');
  const everyAt = text('every-at', sched.at || '', {placeholder: '09:30'});
  const everyOn = text('every-on', sched.on === undefined ? '' : sched.on, {placeholder: 'monday, or 15, or -1'});
  const zone = text('timezone', (j && j.timezone) || sched.timezone || browserZone, {list: 'zones'});
  const zones = h('datalist', {id: 'zones'}, (Intl.supportedValuesOf ? Intl.supportedValuesOf('timeZone') : [browserZone]).map((z) => h('option', {value: z})));
  const isoLocal = (iso) => iso ? localInput(new Date(iso)) : '';
  const startAt = h('input', {type: 'datetime-local', id: 'start_at', step: 1, value: isoLocal(sched.start_at)});
  const endAt = h('input', {type: 'datetime-local', id: 'end_at', step: 1, value: isoLocal(sched.end_at)});
  const countIn = text('count', sched.count || '', {type: 'number', min: 0});
  const misfire = choice('misfire', [['', 'run_once (default)'], ['catch_up', 'catch_up'], ['skip', 'skip']], sched.misfire === 'run_once' ? '' : sched.misfire);
  const misfireMax = text('misfire_max', sched.misfire_max || '', {type: 'number', min: 1});
  const dstGap = choice('dst-gap', [['', 'shift (default)'], ['skip', 'skip']], sched.dst && sched.dst.gap === 'skip' ? 'skip' : '');
  const dstOverlap = choice('dst-overlap', [['', 'first (default)'], ['both', 'both']], sched.dst && sched.dst.overlap === 'both' ? 'both' : '');
  const overlap = choice('overlap', [['allow', 'allow (default)'], ['skip', 'skip'], ['buffer_one', 'buffer one']], (j && j.overlap) || 'allow');
  const skipCals = text('skip_calendars', ((j && j.skip_calendars) || []).join(', '), {placeholder: 'none; or de-holidays, maintenance'});
  const calNames = cals ? cals.calendars.map((c) => c.name) : [];
  const skipHint = ['names of your calendars, comma separated: it does not run on their days. ',
    calNames.length ? `Yours: ${calNames.join(', ')}${cals.next_cursor ? ', …' : ''}. ` : 'You have none yet: ', h('a', {href: '#/calendars'}, 'Calendars')];
  const preview = h('ol', {class: 'next', id: 'preview'});

  const atRow = row('Run at', 'run_at', runAt, `in your time zone, ${browserZone}; sent with its offset and stored in UTC`);
  const delayRow = row('Delay', 'delay', delay);
  const runOnRow = row('Day', 'run_on', runOn, 'local midnight in the time zone below');
  const exprRow = row('Expression', 'schedule.expr', expr, 'cron: 5 fields, or 6 with seconds first; RRULE: FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0');
  const everyRows = h('div', {id: 'every-box'}, row('Every', 'schedule.every', everyUnit), row('At', 'schedule.at', everyAt, 'HH:MM'), row('On', 'schedule.on', everyOn, 'a weekday, or a day of the month'));
  const oneoffBox = h('div', {class: 'timing', id: 'oneoff-box'}, row('How', 'oneoff-how', oneoffHow), atRow, delayRow, runOnRow);
  const recurringBox = h('div', {class: 'timing', id: 'recurring-box'},
    h('div', {class: 'row', 'data-field': 'schedule'}, h('label', {for: 'rule-kind'}, 'Rule'), ruleKind, fieldErr('schedule')),
    exprRow, everyRows,
    row('Starts', 'schedule.start_at', startAt, 'optional; your time zone'),
    row('Ends', 'schedule.end_at', endAt, 'optional, exclusive'),
    row('Count', 'schedule.count', countIn, 'optional: total occurrences'),
    row('Misfire policy', 'schedule.misfire', misfire), row('Misfire bound', 'schedule.misfire_max', misfireMax, 'with catch_up'),
    row('DST gap', 'schedule.dst', dstGap), row('DST overlap', 'schedule.dst.overlap', dstOverlap),
    row('Overlap', 'overlap', overlap, 'while an earlier run still runs'),
    row('Skip calendars', 'skip_calendars', skipCals, skipHint),
    h('h3', null, 'Next 10 runs'), preview);
  const zoneRow = row('Time zone', 'timezone', zone);
  // The SLO: how late an occurrence may start and, for a recurring job
  // only, how long it may go without completing.
  const slo = (j && j.slo) || {};
  const lateAfter = text('slo-late', fmtDuration(slo.late_after), {placeholder: '500ms'});
  const silentAfter = text('slo-silent', fmtDuration(slo.silent_after), {placeholder: '10m'});
  const silentRow = row('Silent after', 'slo.silent_after', silentAfter, 'recurring jobs: broken when no run completes for this long; 1s to 366 days, such as 10m, 36h or 2d');
  const showKind = () => {
    oneoffBox.hidden = !kindOneoff.checked;
    recurringBox.hidden = !kindRecurring.checked;
    atRow.hidden = oneoffHow.value !== 'at';
    delayRow.hidden = oneoffHow.value !== 'delay';
    runOnRow.hidden = oneoffHow.value !== 'run_on';
    zoneRow.hidden = kindOneoff.checked && oneoffHow.value !== 'run_on';
    exprRow.hidden = ruleKind.value === 'every';
    everyRows.hidden = ruleKind.value !== 'every';
    silentRow.hidden = !kindRecurring.checked;
  };
  showKind();

  const priority = text('priority', j ? j.priority : 0, {type: 'number'});
  const retries = text('max_retries', j ? j.max_retries : 3, {type: 'number', min: 0});
  const timeout = text('timeout', j ? j.timeout : '30s');
  const expires = text('expires_after', j ? j.expires_after : '', {placeholder: 'never; or 15m'});
  const jitter = text('jitter', j ? j.jitter : '', {placeholder: 'none; or 60s'});
  const retention = text('retention', j ? j.retention : '', {placeholder: 'the default; or 90d'});
  const history = choice('history', [['all', 'all runs'], ['failures', 'failures, and the last 100 successes']], j ? j.history : 'all');
  const labels = h('textarea', {id: 'labels', name: 'labels', rows: 2, placeholder: 'customer=1234, plan=pro'});
  labels.value = Object.entries((j && j.labels) || {}).map(([k, v]) => `${k}=${v}`).join(', ');
  const key = text('key', j ? j.key : '', {disabled: !!j, placeholder: 'optional: your own name for it'});
  const owner = admin && !j ? text('owner', '', {placeholder: 'a user id; empty: you'}) : null;
  const n = (j && j.notify) || {};
  const notifyOn = NOTIFY_EVENTS.map((e) => h('label', {class: 'inline'}, h('input', {type: 'checkbox', id: 'notify-' + e, value: e, checked: (n.on || []).includes(e)}),
    ' ' + e.replace('_', ' ').replace(/^slo /, 'SLO ')));
  const notifyDest = choice('notify-dest', [['webhook', 'webhook'], ['callback', 'callback'], ['slack', 'Slack'], ['email', 'email']],
    n.callback ? 'callback' : n.slack ? 'slack' : n.email ? 'email' : 'webhook');
  const notifyTo = text('notify-to', n.webhook ? n.webhook.url : n.callback ? n.callback.url : n.slack ? n.slack.webhook_url : n.email ? n.email.to.join(', ') : '', {placeholder: 'URL, or addresses'});
  const general = h('p', {class: 'error', role: 'alert', id: 'form-error', hidden: true});

  const schedule = () => {
    const out = {};
    if (ruleKind.value === 'every') {
      out.every = everyUnit.value;
      if (everyAt.value.trim()) out.at = everyAt.value.trim();
      if (everyOn.value.trim()) out.on = /^-?\d+$/.test(everyOn.value.trim()) ? Number(everyOn.value.trim()) : everyOn.value.trim();
    } else {
      out[ruleKind.value] = expr.value.trim();
    }
    out.timezone = zone.value.trim() || 'UTC';
    if (startAt.value) out.start_at = offsetISO(new Date(startAt.value));
    if (endAt.value) out.end_at = offsetISO(new Date(endAt.value));
    if (Number(countIn.value)) out.count = Number(countIn.value);
    if (misfire.value) out.misfire = misfire.value;
    if (misfire.value === 'catch_up' && Number(misfireMax.value)) out.misfire_max = Number(misfireMax.value);
    if (dstGap.value || dstOverlap.value) out.dst = {...(dstGap.value ? {gap: dstGap.value} : {}), ...(dstOverlap.value ? {overlap: dstOverlap.value} : {})};
    return out;
  };
  const skipNames = () => skipCals.value.split(',').map((x) => x.trim()).filter(Boolean);
  const parseLabels = () => {
    const out = {};
    for (const part of labels.value.split(/[,\n]/).map((x) => x.trim()).filter(Boolean)) {
      const i = part.indexOf('=');
      if (i < 1) throw new APIError(400, {field: 'labels', message: `"${part}" is not key=value`});
      out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
    }
    return out;
  };
  const notify = () => {
    const on = notifyOn.map((l) => l.querySelector('input')).filter((c) => c.checked).map((c) => c.value);
    if (!on.length) return {on: []};
    const to = notifyTo.value.trim();
    if (notifyDest.value === 'email') return {on, email: {to: to.split(',').map((x) => x.trim()).filter(Boolean)}};
    if (notifyDest.value === 'slack') return {on, slack: {webhook_url: to}};
    // A webhook's or callback's headers are write-only: the job shows their
    // fingerprints, which sent back keep them while the URL stays the same.
    const was = n[notifyDest.value];
    const keep = was && was.url === to && was.headers ? {headers: was.headers} : {};
    return {on, [notifyDest.value]: {url: to, ...keep}};
  };
  // body reads every field as a new job would have it.
  const body = () => {
    const b = {name: name.value.trim(), type: type.value, priority: Number(priority.value), max_retries: Number(retries.value), timeout: timeout.value.trim()};
    try {
      b.payload = JSON.parse(payload.value);
    } catch (e) {
      throw new APIError(400, {field: 'payload', message: 'is not valid JSON: ' + e.message});
    }
    if (kindOneoff.checked) {
      if (oneoffHow.value === 'delay') b.delay = delay.value.trim();
      else if (oneoffHow.value === 'run_on') { b.run_on = runOn.value; b.timezone = zone.value.trim() || 'UTC'; } else {
        const d = new Date(runAt.value);
        if (isNaN(d)) throw new APIError(400, {field: 'run_at', message: 'pick a date and time'});
        b.run_at = offsetISO(d);
      }
    } else {
      b.schedule = schedule();
      b.overlap = overlap.value;
      b.skip_calendars = skipNames();
    }
    b.expires_after = expires.value.trim();
    b.jitter = jitter.value.trim();
    b.retention = retention.value.trim();
    b.history = history.value;
    b.labels = parseLabels();
    // An empty slo, sent on an edit of a job that had one, removes it.
    b.slo = {};
    if (lateAfter.value.trim()) b.slo.late_after = lateAfter.value.trim();
    if (b.schedule && silentAfter.value.trim()) b.slo.silent_after = silentAfter.value.trim();
    if (key.value.trim()) b.key = key.value.trim();
    b.notify = notify();
    if (owner && owner.value.trim()) b.owner = owner.value.trim();
    return b;
  };
  // The edit's starting point, as the form reads it before any change.
  const initial = j ? body() : null;
  const timingKeys = ['run_at', 'delay', 'run_on', 'schedule', 'timezone'];
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  // changes is the PATCH body: only what differs from the job as loaded.
  // Timing travels whole (PATCH replaces it), with every schedule field the
  // form holds, so changing the cron keeps start, end, count and policies.
  const changes = (b) => {
    const out = {};
    const timingChanged = timingKeys.some((k) => !same(b[k], initial[k]));
    for (const [k, v] of Object.entries(b)) {
      if (k === 'type' || k === 'key' || k === 'owner' || timingKeys.includes(k)) continue;
      if (!same(v, initial[k])) out[k] = v;
    }
    if (timingChanged) for (const k of timingKeys) if (b[k] !== undefined && !(k === 'timezone' && b.schedule)) out[k] = b[k];
    if (out.notify && !out.notify.on.length && !(initial.notify.on || []).length) delete out.notify;
    // A job made one-off keeps no calendars: they are for recurring jobs only.
    if (!b.schedule && (initial.skip_calendars || []).length) out.skip_calendars = [];
    return out;
  };

  let previewSeq = 0;
  const refreshPreview = async () => {
    if (!kindRecurring.checked) return;
    const seq = ++previewSeq;
    if (ruleKind.value !== 'every' && !expr.value.trim()) {
      preview.replaceChildren(h('li', {class: 'empty'}, 'Type a rule to see its next runs.'));
      return;
    }
    try {
      const names = skipNames();
      const r = await api('POST', '/api/v1/schedules/preview', {schedule: schedule(), n: 10, ...(names.length ? {skip_calendars: names} : {})});
      if (seq !== previewSeq) return;
      for (const e of form.querySelectorAll('[data-error-for^="schedule"], [data-error-for="skip_calendars"]')) e.hidden = true;
      preview.replaceChildren(...upcomingItems(r.next, r.skipped || [], false));
    } catch (e) {
      if (seq !== previewSeq) return;
      preview.replaceChildren();
      showFieldError(form, e, general);
    }
  };
  let debounce = 0;
  const onTiming = () => {
    showKind();
    clearTimeout(debounce);
    debounce = setTimeout(refreshPreview, 250);
  };
  for (const el of [kindOneoff, kindRecurring, oneoffHow, ruleKind, expr, zone, runAt, everyUnit, everyAt, everyOn, startAt, endAt, countIn, misfire, misfireMax, dstGap, dstOverlap, skipCals]) {
    el.addEventListener('input', onTiming);
    el.addEventListener('change', onTiming);
  }

  const form = h('form', {class: 'job-form', id: 'job-form', novalidate: true, onsubmit: async (ev) => {
    ev.preventDefault();
    for (const e of form.querySelectorAll('.field-error')) e.hidden = true;
    general.hidden = true;
    try {
      const b = body();
      if (!j) {
        for (const k of ['expires_after', 'jitter', 'retention']) if (!b[k]) delete b[k];
        if (!b.notify.on.length) delete b.notify;
        if (!Object.keys(b.labels).length) delete b.labels;
        if (!Object.keys(b.slo).length) delete b.slo;
        if (b.skip_calendars && !b.skip_calendars.length) delete b.skip_calendars;
        if (b.overlap === 'allow') delete b.overlap;
      }
      const patch = j ? changes(b) : null;
      if (j && !Object.keys(patch).length) {
        location.hash = '#/jobs/' + j.id;
        return;
      }
      const saved = j ? await api('PATCH', '/api/v1/jobs/' + j.id, patch) : await api('POST', '/api/v1/jobs', b);
      location.hash = '#/jobs/' + saved.id;
    } catch (e) {
      showFieldError(form, e, general);
    }
  }},
  h('h1', null, j ? 'Edit ' + j.name : 'New job'),
  row('Name', 'name', name),
  row('Type', 'type', type),
  row('Payload (JSON)', 'payload', payload),
  h('fieldset', null, h('legend', null, 'When'),
    h('div', null, h('label', {class: 'inline'}, kindOneoff, ' One-off'), h('label', {class: 'inline'}, kindRecurring, ' Recurring')),
    oneoffBox, zoneRow, zones, recurringBox),
  h('details', {open: !!j}, h('summary', null, 'Retries, timeout, priority, expiry, jitter'),
    row('Max retries', 'max_retries', retries), row('Timeout', 'timeout', timeout, 'a Go duration, 100ms to 1h'),
    row('Priority', 'priority', priority, 'higher first among jobs due at the same millisecond'),
    row('Expires after', 'expires_after', expires, 'an attempt that cannot start this long after it was due is not run'),
    row('Jitter', 'jitter', jitter, 'spreads jobs due at the same time: each run is due up to this much later, by an offset of its own')),
  h('details', {open: !!j}, h('summary', null, 'Labels, key, retention'),
    row('Labels', 'labels', labels, 'key=value pairs, comma separated'),
    row('Key', 'key', key, 'unique among your jobs that can still run'),
    row('Retention', 'retention', retention, 'how long it is kept once finished'),
    row('History', 'history', history),
    owner ? row('Owner', 'owner', owner) : null),
  h('details', {open: !!(j && j.slo)}, h('summary', null, 'SLO: when it is late or silent'),
    row('Late after', 'slo.late_after', lateAfter, 'broken when a run starts, or is still waiting, this long after it is due; 1ms to 24h, such as 500ms or 5s'),
    silentRow,
    h('p', {class: 'hint'}, 'A breach and its end are sent to the alert destination below when its events include SLO breach and SLO recovered.'),
    fieldErr('slo')),
  h('details', {open: !!(j && j.notify)}, h('summary', null, 'Alerts'),
    h('div', {class: 'row', 'data-field': 'notify.on'}, h('span', null, 'On'), h('div', null, notifyOn), fieldErr('notify.on')),
    row('Send to', 'notify', notifyDest, 'a callback is sent at least once, on completed, failed, permanently failed, SLO breach or SLO recovered only'),
    // A callback's URL goes in the same box as a webhook's, and so do its errors.
    h('div', {class: 'row', 'data-field': 'notify.webhook'}, h('label', {for: 'notify-to'}, 'Address'), notifyTo,
      h('span', {class: 'hint'}, 'the webhook, callback or Slack URL, or email addresses'), fieldErr('notify.webhook'), fieldErr('notify.callback'))),
  general,
  h('div', {class: 'actions'}, h('button', {type: 'submit', id: 'save', class: 'primary'}, j ? 'Save' : 'Create job'),
    h('a', {href: j ? '#/jobs/' + j.id : '#/jobs', class: 'button'}, 'Back')));
  live() && mount(form);
  refreshPreview();
}

// showFieldError puts an API error next to the field it names: the most
// specific element whose data-field is the field or a prefix of it
// ("schedule.cron" lands on the expression), else in the general box. The
// message names the field as the form labels it.
function showFieldError(form, err, general) {
  let field = err.field || '';
  if (field === 'schedule.cron' || field === 'schedule.rrule') field = 'schedule.expr';
  while (field) {
    const el = form.querySelector(`[data-error-for="${CSS.escape(field)}"]`);
    if (el) {
      el.textContent = errorText(err);
      el.hidden = false;
      // An error in a closed section opens it, so that it is seen.
      const section = el.closest('details');
      if (section) section.open = true;
      return;
    }
    // "skip_calendars[1]" lands on skip_calendars, "a.b" on a.
    const i = field.endsWith(']') ? field.lastIndexOf('[') : field.lastIndexOf('.');
    field = i < 0 ? '' : field.slice(0, i);
  }
  general.textContent = errorText(err);
  general.hidden = false;
}

// ---- API keys

async function keysPage() {
  const live = alive();
  const q = query();
  const admin = isAdmin();
  const users = admin ? (await api('GET', '/api/v1/users?limit=500')).users : [me];
  const userID = q.get('user') || me.id;
  const view = h('div', {id: 'keys-view'});
  const msg = h('div', {role: 'status', id: 'key-msg'});
  const nameIn = h('input', {id: 'key-name', placeholder: 'what the key is for', 'aria-label': 'key name'});
  const scopesIn = h('select', {id: 'key-scopes', 'aria-label': 'what the key may do'},
    h('option', {value: ''}, 'everything the user may do'),
    h('option', {value: 'jobs:read,runs:read'}, 'read only (jobs and runs)'),
    h('option', {value: 'jobs:read,jobs:write'}, 'jobs, no runs'));
  const expiryIn = h('select', {id: 'key-expiry', 'aria-label': 'when the key expires'},
    [['', 'never expires'], ['1', 'expires in 1 day'], ['30', 'in 30 days'], ['90', 'in 90 days'], ['365', 'in a year']]
      .map(([v, t]) => h('option', {value: v}, t)));
  const now = Date.now();
  const draw = async () => {
    const keys = (await api('GET', `/api/v1/users/${userID}/keys`)).keys;
    morph(view, [h('table', {id: 'keys'},
      h('thead', null, h('tr', null, ['Name', 'Prefix', 'Scopes', 'Created', 'Last used', 'Expires', 'State', ''].map((t) => h('th', null, t)))),
      h('tbody', {'data-morph': 'children'}, keys.length ? keys.map((k) => h('tr', {'data-id': k.id},
        h('td', null, k.name || '—'), h('td', {class: 'id'}, k.prefix),
        h('td', {class: 'scopes'}, k.all_scopes ? 'all' : (k.scopes || []).join(', ')),
        h('td', null, fmtTime(k.created_at)), h('td', null, fmtTime(k.last_used_at)), h('td', null, k.expires_at ? fmtTime(k.expires_at) : 'never'),
        h('td', null, k.revoked_at ? h('span', {class: 'badge st-cancelled'}, 'revoked')
          : (k.expires_at && Date.parse(k.expires_at) <= now ? h('span', {class: 'badge st-expired'}, 'expired') : h('span', {class: 'badge st-scheduled'}, 'live'))),
        h('td', null, k.revoked_at ? '' : h('button', {type: 'button', class: 'danger revoke', id: 'revoke-' + k.id, onclick: async () => {
          if (!await confirmDialog('Revoke this key?', `${k.name || k.prefix}: every client using it is refused from now on.`, 'Revoke')) return;
          try {
            await api('DELETE', '/api/v1/keys/' + k.id);
            msg.replaceChildren(h('p', {class: 'ok'}, 'Revoked.'));
            await draw();
          } catch (e) {
            msg.replaceChildren(errorBox(e));
          }
        }}, 'Revoke')))) : h('tr', null, h('td', {colspan: 8, class: 'empty'}, 'No keys yet: create one above to call the API (Authorization: Bearer <key>) or to sign in here.'))))]);
  };
  const create = h('form', {class: 'filters', id: 'key-form', onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      const body = {name: nameIn.value.trim()};
      if (scopesIn.value) body.scopes = scopesIn.value.split(',');
      if (expiryIn.value) body.expires_at = new Date(Date.now() + Number(expiryIn.value) * 86400000).toISOString();
      const k = await api('POST', `/api/v1/users/${userID}/keys`, body);
      nameIn.value = '';
      msg.replaceChildren(h('div', {class: 'new-key'}, h('p', null, 'The new key, shown this once: copy it now.'), h('code', {id: 'new-key'}, k.key)));
      await draw();
    } catch (e) {
      msg.replaceChildren(errorBox(e));
    }
  }}, nameIn, scopesIn, expiryIn, h('button', {type: 'submit', id: 'create-key', class: 'primary'}, 'Create key'));
  const picker = admin ? h('label', {class: 'inline'}, 'User ', h('select', {id: 'key-user', onchange: (ev) => go('#/keys', {user: ev.target.value})},
    users.map((u) => h('option', {value: u.id, selected: u.id === userID}, u.name)))) : null;
  await draw();
  live() && mount(h('div', {class: 'bar'}, h('h1', null, 'API keys'), picker), create, msg, wrap(view));
}

// ---- users (administrators)

async function usersPage() {
  const live = alive();
  const view = h('div', {id: 'users-view'});
  const msg = h('div', {role: 'status', id: 'user-msg'});
  const act = async (f) => {
    msg.replaceChildren();
    try {
      await f();
      await draw();
    } catch (e) {
      msg.replaceChildren(errorBox(e));
    }
  };
  const limitsForm = (u) => h('form', {class: 'limits', id: 'limits-' + u.id, onsubmit: (ev) => {
    ev.preventDefault();
    const limits = {};
    for (const f of LIMIT_FIELDS) {
      const v = ev.target.elements[f].value.trim();
      if (v) limits[f] = Number(v);
    }
    act(() => api('PATCH', '/api/v1/users/' + u.id, {limits}));
  }}, LIMIT_FIELDS.map((f) => h('label', null, f.replace(/_/g, ' '), h('input', {name: f, type: 'number', min: 1, value: u.limits[f] || '',
    placeholder: String((u.effective_limits || {})[f] ?? '')}))), h('button', {type: 'submit'}, 'Save limits'));
  const draw = async () => {
    const users = (await api('GET', '/api/v1/users?limit=500')).users;
    morph(view, [h('table', {id: 'users'},
      h('thead', null, h('tr', null, ['Name', 'Role', 'State', 'Created', 'Limits', ''].map((t) => h('th', null, t)))),
      h('tbody', null, users.map((u) => h('tr', {'data-id': u.id},
        h('td', null, u.name, h('div', {class: 'id'}, u.id)), h('td', null, u.role),
        h('td', null, u.disabled_at ? badge('paused') : badge('scheduled')), h('td', null, fmtTime(u.created_at)),
        h('td', null, h('details', null, h('summary', null, Object.keys(u.limits).length ? 'own limits' : 'defaults'), limitsForm(u))),
        h('td', {class: 'actions'},
          u.disabled_at
            ? h('button', {type: 'button', id: 'enable-' + u.id, onclick: () => act(() => api('POST', `/api/v1/users/${u.id}/enable`))}, 'Enable')
            : u.id === me.id ? null : h('button', {type: 'button', class: 'danger', id: 'disable-' + u.id, onclick: async () => {
              if (await confirmDialog(`Disable ${u.name}?`, 'Their keys stop working, their jobs pause and their running attempts stop.', 'Disable')) {
                act(() => api('POST', `/api/v1/users/${u.id}/disable`));
              }
            }}, 'Disable'),
          h('a', {class: 'button', href: '#/keys?user=' + u.id}, 'Keys'),
          h('a', {class: 'button', href: '#/jobs?owner=' + u.id}, 'Jobs'))))))]);
  };
  const nameIn = h('input', {id: 'user-name', placeholder: 'name', required: true, 'aria-label': 'new user name'});
  const role = h('select', {id: 'user-role', 'aria-label': 'role'}, h('option', {value: 'user'}, 'user'), h('option', {value: 'admin'}, 'admin'));
  const create = h('form', {class: 'filters', id: 'user-form', onsubmit: (ev) => {
    ev.preventDefault();
    act(async () => {
      await api('POST', '/api/v1/users', {name: nameIn.value.trim(), role: role.value});
      nameIn.value = '';
    });
  }}, nameIn, role, h('button', {type: 'submit', id: 'create-user', class: 'primary'}, 'Create user'));
  await draw();
  live() && mount(h('div', {class: 'bar'}, h('h1', null, 'Users')), create, msg, wrap(view));
}

// ---- audit log (administrators)

async function auditPage() {
  const live = alive();
  const q = query();
  const params = new URLSearchParams();
  for (const k of ['action', 'actor', 'target', 'cursor']) if (q.get(k)) params.set(k, q.get(k));
  for (const k of ['since', 'until']) if (q.get(k)) params.set(k, new Date(q.get(k)).toISOString());
  params.set('limit', q.get('limit') || '50');
  const list = await api('GET', '/api/v1/audit?' + params);
  const field = (name, placeholder, type) => h('input', {name, id: 'a-' + name, placeholder, type: type || 'search', step: type ? 1 : undefined, 'aria-label': name, value: q.get(name) || ''});
  const filters = h('form', {class: 'filters', id: 'audit-filters', role: 'search', onsubmit: (ev) => {
    ev.preventDefault();
    go('#/audit', new URLSearchParams([...new FormData(ev.target)]));
  }}, field('action', 'action, e.g. job.bulk'), field('actor', 'actor id'), field('target', 'job or target id'),
  h('label', {class: 'inline'}, 'From ', field('since', '', 'datetime-local')), h('label', {class: 'inline'}, 'to ', field('until', '', 'datetime-local')),
  h('button', {type: 'submit', id: 'audit-apply'}, 'Filter'));
  const table = h('table', {id: 'audit'},
    h('thead', null, h('tr', null, ['At', 'Actor', 'Action', 'Target', 'Change'].map((t) => h('th', null, t)))),
    h('tbody', null, list.entries.length ? list.entries.map((e) => h('tr', null, h('td', null, fmtTime(e.at)), h('td', {class: 'id'}, e.actor),
      h('td', null, e.action), h('td', null, e.target_type, ' ', h('span', {class: 'id'}, e.target_id)),
      h('td', {class: 'output'}, short(JSON.stringify(e.change), 300)))) : h('tr', null, h('td', {colspan: 5, class: 'empty'}, 'No entries match: widen the filters. Every change to a job, user or key is recorded here.'))));
  live() && mount(h('div', {class: 'bar'}, h('h1', null, 'Audit log')), filters, wrap(table), pager('#/audit', q, list.next_cursor), pageSize(q, 'audit-page-size'));
}

// ---- system (administrators)

async function systemPage() {
  const live = alive();
  const view = h('div', {id: 'system'});
  live() && mount(h('h1', null, 'System'), view);
  const draw = async () => morph(view, systemView(await api('GET', '/api/v1/system')));
  await draw();
  every(5000, draw);
}

function minuteKey(iso) { return Math.floor(new Date(iso).getTime() / 60000); }
function systemView(sys) {
  const now = Math.floor(new Date(sys.generated_at).getTime() / 60000);
  const ahead = Array.from({length: 60}, (_, i) => now + i);
  const behind = Array.from({length: 60}, (_, i) => now - 59 + i);

  const due = Object.fromEntries(sys.due_next_hour.map((m) => [minuteKey(m.minute), m.count]));
  const runs = Object.fromEntries(sys.runs.map((m) => [minuteKey(m.minute), m.counts]));
  const late = Object.fromEntries(sys.lateness.map((m) => [minuteKey(m.minute), m]));
  const statuses = Object.keys(RUN_COLORS);

  const card = (label, value, id) => h('div', {class: 'card', id}, h('div', {class: 'value'}, value), h('div', {class: 'label'}, label));
  const lock = sys.scheduler.loader_lock_held ? `held, ${fmtMS(sys.scheduler.loader_lock_ttl_ms)} left` : 'not held';
  const cards = h('div', {class: 'cards'},
    card('due set (ZSET) size', sys.queue.due, 'card-due'),
    card('stream length', sys.queue.stream, 'card-stream'),
    card('pending entries', sys.queue.pending, 'card-pending'),
    card('loader lock', lock, 'card-lock'));

  const workers = h('table', {class: 'workers', id: 'workers'},
    h('thead', null, h('tr', null, ['Worker (consumer)', 'State', 'Pending', 'Idle'].map((t) => h('th', null, t)))),
    h('tbody', null, sys.workers.length ? sys.workers.map((w) => h('tr', null,
      h('td', null, w.name), h('td', null, w.idle_ms < 30000 ? badge('live') : badge('gone')),
      h('td', null, w.pending), h('td', null, fmtMS(w.idle_ms)))) : h('tr', null, h('td', {colspan: 4, class: 'empty'}, 'No workers have joined the group: nothing will run until one does. make run starts two; else start bin/worker (docs/operations.md).'))));

  const ago = (iso) => new Date(sys.generated_at) - new Date(iso);
  const schedulers = h('table', {class: 'workers', id: 'schedulers'},
    h('thead', null, h('tr', null, ['Scheduler', 'State', 'Role', 'Last heartbeat'].map((t) => h('th', null, t)))),
    h('tbody', null, sys.schedulers.length ? sys.schedulers.map((s) => h('tr', null,
      h('td', null, s.name), h('td', null, ago(s.last_seen) < 5000 ? badge('live') : badge('gone')),
      h('td', null, s.leader ? 'loader (lock holder)' : 'publisher'), h('td', null, fmtMS(ago(s.last_seen)) + ' ago')))
      : h('tr', null, h('td', {colspan: 4, class: 'empty'}, 'No scheduler has reported in the last hour: nothing is loaded or published until one runs. Start bin/scheduler (docs/operations.md).'))));

  return [cards,
    h('section', {class: 'chart'}, h('h2', null, 'Jobs due in the next hour, per minute'),
      barChart(ahead.map((m) => ({minute: m, values: {due: due[m] || 0}})), ['due'], {due: '#1565c0'}, 'chart-due')),
    h('section', {class: 'chart'}, h('h2', null, 'Runs per minute by status, last hour'),
      barChart(behind.map((m) => ({minute: m, values: runs[m] || {}})), statuses, RUN_COLORS, 'chart-runs'), legend(statuses, RUN_COLORS)),
    h('section', {class: 'chart'}, h('h2', null, 'Lateness per minute, last hour (start minus due time)'),
      lineChart(behind.map((m) => ({minute: m, values: late[m] ? {p50: late[m].p50_ms, p99: late[m].p99_ms} : null})), ['p50', 'p99'],
        {p50: '#2e7d32', p99: '#c62828'}, 'chart-lateness'), legend(['p50', 'p99'], {p50: '#2e7d32', p99: '#c62828'})),
    h('h2', null, 'Instances'),
    h('p', null, 'Every scheduler publishes due jobs; only the loader lock holder loads from Postgres, and the others wait to take over. The lock is ',
      h('strong', null, lock), '.'),
    schedulers, workers];
}

const W = 720, H = 180, PAD = {l: 44, r: 8, t: 8, b: 24};

function legend(keys, colors) {
  return h('div', {class: 'legend'}, keys.map((k) => h('span', null, h('i', {class: 'swatch', 'data-color': colors[k]}), k.replace('_', ' '))));
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function axes(svg, max, buckets, fmt) {
  const ih = H - PAD.t - PAD.b;
  for (const f of [0, 0.5, 1]) {
    const y = PAD.t + ih * (1 - f);
    svg.append(s('line', {x1: PAD.l, x2: W - PAD.r, y1: y, y2: y, class: 'grid'}));
    svg.append(s('text', {x: PAD.l - 4, y: y + 4, 'text-anchor': 'end', class: 'tick'}, fmt(max * f)));
  }
  const bw = (W - PAD.l - PAD.r) / buckets.length;
  buckets.forEach((b, i) => {
    if (i % 10 !== 0) return;
    const d = new Date(b.minute * 60000);
    svg.append(s('text', {x: PAD.l + i * bw, y: H - 6, class: 'tick'}, `${pad(d.getHours())}:${pad(d.getMinutes())}`));
  });
  return bw;
}

// barChart draws stacked bars, one per minute, one segment per key.
function barChart(buckets, keys, colors, id) {
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart-svg', id, role: 'img'});
  const totals = buckets.map((b) => keys.reduce((a, k) => a + (b.values[k] || 0), 0));
  const max = Math.max(2, niceMax(Math.max(0, ...totals))); // whole numbers at every tick
  const bw = axes(svg, max, buckets, (v) => String(Math.round(v)));
  const ih = H - PAD.t - PAD.b;
  buckets.forEach((b, i) => {
    let y = PAD.t + ih;
    const d = new Date(b.minute * 60000);
    for (const k of keys) {
      const v = b.values[k] || 0;
      if (!v) continue;
      const bh = ih * v / max;
      y -= bh;
      svg.append(s('rect', {x: PAD.l + i * bw + 1, y, width: Math.max(1, bw - 2), height: bh, fill: colors[k], class: 'bar'},
        s('title', null, `${pad(d.getHours())}:${pad(d.getMinutes())} ${k.replace('_', ' ')}: ${v}`)));
    }
  });
  return svg;
}

// lineChart draws one polyline per key over the minutes that have a value.
function lineChart(buckets, keys, colors, id) {
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart-svg', id, role: 'img'});
  const vals = buckets.flatMap((b) => (b.values ? keys.map((k) => b.values[k]) : []));
  const max = niceMax(Math.max(0, ...vals));
  const bw = axes(svg, max, buckets, (v) => fmtMS(v));
  const ih = H - PAD.t - PAD.b;
  for (const k of keys) {
    const pts = [];
    buckets.forEach((b, i) => {
      if (!b.values) return;
      const x = PAD.l + i * bw + bw / 2;
      const y = PAD.t + ih * (1 - Math.max(0, b.values[k]) / max);
      pts.push(`${x.toFixed(1)},${y.toFixed(1)}`);
      const d = new Date(b.minute * 60000);
      svg.append(s('circle', {cx: x, cy: y, r: 2.5, fill: colors[k]},
        s('title', null, `${pad(d.getHours())}:${pad(d.getMinutes())} ${k}: ${fmtMS(b.values[k])}`)));
    });
    if (pts.length > 1) svg.append(s('polyline', {points: pts.join(' '), fill: 'none', stroke: colors[k], 'stroke-width': 2}));
  }
  if (!vals.length) svg.append(s('text', {x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'tick'}, 'no runs in the last hour'));
  return svg;
}

// Swatch colours are set from data attributes: the page's policy allows no
// inline style attributes in markup, but CSSOM assignments are fine.
new MutationObserver(() => {
  for (const el of document.querySelectorAll('i.swatch[data-color]')) el.style.background = el.dataset.color;
}).observe(document.documentElement, {childList: true, subtree: true});

// The auto-refresh switch: on by default. Nothing is kept in page storage.
function showRefresh() {
  const b = document.getElementById('auto-refresh');
  b.setAttribute('aria-pressed', String(autoRefresh));
  b.textContent = autoRefresh ? 'Auto-refresh: on' : 'Auto-refresh: off';
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('signout').addEventListener('click', signOut);
  document.getElementById('auto-refresh').addEventListener('click', () => {
    autoRefresh = !autoRefresh;
    showRefresh();
  });
  showRefresh();
  window.addEventListener('hashchange', route);
  route();
});
