// tock's browser dashboard: a hash-routed page over the JSON API at /api/v1.
// The credential lives in the HttpOnly session cookie set by POST /ui/session;
// this script never sees it. Every change it sends carries X-Tock-CSRF: 1,
// without which the API refuses a cookie-authenticated change.
'use strict';

const STATUSES = ['scheduled', 'paused', 'completed', 'permanently_failed', 'cancelled'];
// The job types and an example payload of each, from GET /api/v1/job-types
// (the server's registered types), loaded once before the first page.
let TYPES = [];
let PAYLOADS = {};
const RUN_COLORS = {completed: '#2e7d32', failed: '#ef6c00', permanently_failed: '#c62828', running: '#1565c0', skipped: '#9e9e9e'};
const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

let me = null;       // the signed-in user, from GET /api/v1/me
let timers = [];     // refreshes of the current page, stopped on navigation

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
    location.hash = '#/signin';
  }
  if (!r.ok) throw new APIError(r.status, (data && data.error) || {code: 'unknown', message: r.statusText});
  return data;
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

function badge(status) { return h('span', {class: 'badge st-' + status}, status.replace('_', ' ')); }

function errorBox(err) { return h('p', {class: 'error', role: 'alert'}, err.message || String(err)); }

// ---- router

const routes = [
  [/^#\/signin/, signinPage],
  [/^#\/new$/, () => formPage(null)],
  [/^#\/jobs\/([0-9a-f-]{36})\/edit$/, (m) => formPage(m[1])],
  [/^#\/jobs\/([0-9a-f-]{36})$/, (m) => detailPage(m[1])],
  [/^#\/system$/, systemPage],
  [/^#\/jobs(\?.*)?$/, jobsPage],
];

async function route() {
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
    document.getElementById('whoami').textContent = `${me.name} (${me.role})`;
    document.getElementById('nav-system').hidden = me.role !== 'admin';
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', hash.startsWith('#/' + a.dataset.nav));
  }
  for (const [re, page] of routes) {
    const m = hash.match(re);
    if (m) {
      try {
        await page(m);
      } catch (e) {
        if (e.status !== 401) mount(errorBox(e));
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

// ---- sign-in

function signinPage() {
  const failed = query().has('failed');
  const msg = h('p', {class: 'error', role: 'alert', hidden: !failed}, 'That key was not accepted.');
  const input = h('input', {type: 'password', name: 'key', id: 'key', autocomplete: 'current-password', required: true,
    placeholder: 'tock_… or the admin token'});
  const form = h('form', {method: 'post', action: '/ui/session', class: 'signin', id: 'signin-form', onsubmit: async (ev) => {
    ev.preventDefault();
    msg.hidden = true;
    try {
      await api('POST', '/ui/session', {key: input.value});
      me = null;
      location.hash = '#/jobs';
    } catch (e) {
      msg.textContent = e.status === 401 ? 'That key was not accepted.' : e.message;
      msg.hidden = false;
    }
  }},
  h('h1', null, 'Sign in to tock'),
  h('label', {for: 'key'}, 'API key or admin token'),
  input,
  msg,
  h('button', {type: 'submit', id: 'signin'}, 'Sign in'),
  h('p', {class: 'hint'}, 'The key is kept in an HttpOnly cookie for this browser session and never in page storage.'));
  mount(form);
  input.focus();
}

async function signOut() {
  await api('POST', '/ui/session/logout').catch(() => null);
  me = null;
  location.hash = '#/signin';
}

// ---- jobs list

async function jobsPage() {
  const q = query();
  const params = new URLSearchParams();
  for (const k of ['q', 'status', 'type', 'owner', 'cursor']) if (q.get(k)) params.set(k, q.get(k));
  params.set('limit', '20');
  const admin = me.role === 'admin';
  const [list, users] = await Promise.all([
    api('GET', '/api/v1/jobs?' + params),
    admin ? api('GET', '/api/v1/users?limit=500').catch(() => ({users: []})) : Promise.resolve({users: []}),
  ]);
  const names = Object.fromEntries(users.users.map((u) => [u.id, u.name]));

  const select = (name, values, label) => h('select', {name, id: 'f-' + name, 'aria-label': label},
    h('option', {value: ''}, 'any ' + label),
    values.map(([v, text]) => h('option', {value: v, selected: q.get(name) === v}, text)));
  const filters = h('form', {class: 'filters', id: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    const f = new URLSearchParams();
    for (const [k, v] of new FormData(ev.target)) if (v) f.set(k, v);
    location.hash = '#/jobs' + (f.toString() ? '?' + f : '');
  }},
  h('input', {type: 'search', name: 'q', id: 'f-q', placeholder: 'name or id', value: q.get('q') || ''}),
  select('status', STATUSES.map((v) => [v, v]), 'status'),
  select('type', TYPES.map((v) => [v, v]), 'type'),
  admin ? select('owner', users.users.map((u) => [u.id, u.name]), 'owner') : null,
  h('button', {type: 'submit', id: 'apply'}, 'Filter'));

  const rows = list.jobs.map((j) => h('tr', {'data-id': j.id},
    h('td', null, h('a', {href: '#/jobs/' + j.id, class: 'job-name'}, j.name), h('div', {class: 'id'}, j.id)),
    h('td', null, badge(j.status)),
    h('td', null, j.type),
    h('td', null, j.schedule ? 'recurring' : 'one-off'),
    h('td', null, fmtTime(j.next_run_at)),
    h('td', {class: 'last-run'}, j.last_run ? [badge(j.last_run.status), ' ', fmtTime(j.last_run.started_at)] : '—'),
    admin ? h('td', null, names[j.owner] || j.owner.slice(0, 8)) : null));
  // data-query says which filters the rows answer, so a reader (or a test)
  // can tell the new list from the one it replaces.
  const table = h('table', {class: 'jobs', id: 'jobs', 'data-query': params.toString()},
    h('thead', null, h('tr', null, h('th', null, 'Job'), h('th', null, 'Status'), h('th', null, 'Type'),
      h('th', null, 'Timing'), h('th', null, 'Next run'), h('th', null, 'Last outcome'), admin ? h('th', null, 'Owner') : null)),
    h('tbody', null, rows.length ? rows : h('tr', null, h('td', {colspan: 7, class: 'empty'}, 'No jobs match.'))));

  const pageLink = (cursor, text, id) => {
    const p = new URLSearchParams(q);
    if (cursor) p.set('cursor', cursor); else p.delete('cursor');
    return h('a', {href: '#/jobs' + (p.toString() ? '?' + p : ''), class: 'button', id}, text);
  };
  const pager = h('div', {class: 'pager'},
    q.get('cursor') ? pageLink('', '« First page', 'first-page') : null,
    list.next_cursor ? pageLink(list.next_cursor, 'Next page »', 'next-page') : null);
  mount(h('div', {class: 'bar'}, h('h1', null, 'Jobs'), h('a', {href: '#/new', class: 'button primary'}, 'New job')),
    filters, table, pager);
}

// ---- job detail

async function detailPage(id) {
  const view = h('div', {id: 'detail'});
  mount(view);
  let runsCursor = '';
  const draw = async () => {
    const [j, next, runs] = await Promise.all([
      api('GET', '/api/v1/jobs/' + id),
      api('GET', `/api/v1/jobs/${id}/next?n=10`).catch(() => ({next: []})),
      api('GET', `/api/v1/jobs/${id}/runs?limit=50` + (runsCursor ? '&cursor=' + encodeURIComponent(runsCursor) : '')),
    ]);
    view.replaceChildren(...detailView(j, next.next, runs, draw));
  };
  await draw();
  timers.push(setInterval(() => draw().catch(() => null), 2000));
}

function detailView(j, next, runs, redraw) {
  const msg = h('p', {class: 'error', role: 'alert', hidden: true});
  const act = (label, id, method, path, cls) => h('button', {type: 'button', id, class: cls, onclick: async () => {
    msg.hidden = true;
    try {
      await api(method, path);
      await redraw();
    } catch (e) {
      msg.textContent = e.message;
      msg.hidden = false;
    }
  }}, label);
  // Cancel asks twice: the first click arms it for five seconds.
  const cancel = h('button', {type: 'button', id: 'cancel', class: 'danger', onclick: async (ev) => {
    const b = ev.currentTarget;
    if (!b.dataset.armed) {
      b.dataset.armed = '1';
      b.textContent = 'Confirm cancel';
      setTimeout(() => { delete b.dataset.armed; b.textContent = 'Cancel job'; }, 5000);
      return;
    }
    try {
      await api('DELETE', '/api/v1/jobs/' + j.id);
      await redraw();
    } catch (e) {
      msg.textContent = e.message;
      msg.hidden = false;
    }
  }}, 'Cancel job');
  const live = j.status === 'scheduled' || j.status === 'paused';
  const actions = h('div', {class: 'actions'},
    live ? h('a', {href: `#/jobs/${j.id}/edit`, class: 'button', id: 'edit'}, 'Edit') : null,
    live ? act('Run now', 'trigger', 'POST', `/api/v1/jobs/${j.id}/trigger`) : null,
    j.status === 'scheduled' ? act('Pause', 'pause', 'POST', `/api/v1/jobs/${j.id}/pause`) : null,
    j.status === 'paused' ? act('Resume', 'resume', 'POST', `/api/v1/jobs/${j.id}/resume`) : null,
    live ? cancel : null);

  const timing = j.schedule
    ? [h('dt', null, 'Schedule'), h('dd', null, h('pre', {id: 'schedule'}, JSON.stringify(j.schedule, null, 2)))]
    : [h('dt', null, 'Runs at'), h('dd', {id: 'run-at'}, fmtTime(j.run_at), ' ', h('span', {class: 'hint'}, `(${browserZone}); ${j.run_at} UTC`))];
  const facts = h('dl', {class: 'facts'},
    h('dt', null, 'Status'), h('dd', {id: 'status'}, badge(j.status), j.paused_reason ? ' ' + j.paused_reason : ''),
    h('dt', null, 'Type'), h('dd', null, j.type),
    h('dt', null, 'Id'), h('dd', {class: 'id'}, j.id),
    ...timing,
    h('dt', null, 'Time zone'), h('dd', null, j.timezone),
    h('dt', null, 'Next run'), h('dd', null, fmtTime(j.next_run_at)),
    h('dt', null, 'Retries, timeout, priority'), h('dd', null, `${j.max_retries}, ${j.timeout}, ${j.priority}`),
    h('dt', null, 'Payload'), h('dd', null, h('pre', {id: 'payload'}, JSON.stringify(j.payload, null, 2))));

  const nextList = h('ol', {class: 'next', id: 'next-runs'},
    next.length ? next.map((n) => h('li', null, n.at, h('span', {class: 'hint'}, ' · ' + fmtTime(n.utc) + ' here'))) : h('li', {class: 'empty'}, 'none'));

  // Runs come newest first: the first row of an occurrence is its last attempt,
  // the one a retry follows.
  const seen = new Set();
  const runRows = runs.runs.map((r) => {
    const dur = r.finished_at ? new Date(r.finished_at) - new Date(r.started_at) : null;
    const last = !seen.has(r.scheduled_for);
    seen.add(r.scheduled_for);
    const retry = last && r.status === 'permanently_failed' && j.status !== 'cancelled' && j.status !== 'paused'
      ? h('button', {type: 'button', class: 'retry', onclick: async () => {
        msg.hidden = true;
        try {
          await api('POST', `/api/v1/jobs/${j.id}/retry`, {scheduled_for: r.scheduled_for});
          await redraw();
        } catch (e) {
          msg.textContent = e.message;
          msg.hidden = false;
        }
      }}, 'Retry')
      : null;
    return h('tr', {class: 'run', 'data-status': r.status, 'data-attempt': r.attempt},
      h('td', null, r.attempt), h('td', null, badge(r.status), retry ? ' ' : null, retry), h('td', null, fmtTime(r.scheduled_for)),
      h('td', null, fmtTime(r.started_at)), h('td', null, fmtMS(r.lateness_ms)), h('td', null, dur === null ? 'running' : fmtMS(dur)),
      h('td', {class: 'output'}, r.error ? h('span', {class: 'error-text'}, r.error) : (r.output || '')));
  });
  const runTable = h('table', {class: 'runs', id: 'runs'},
    h('thead', null, h('tr', null, ['Attempt', 'Status', 'Scheduled for', 'Started', 'Lateness', 'Duration', 'Output / error'].map((t) => h('th', null, t)))),
    h('tbody', null, runRows.length ? runRows : h('tr', null, h('td', {colspan: 7, class: 'empty'}, 'No runs yet.'))));

  return [h('div', {class: 'bar'}, h('h1', {id: 'job-title'}, j.name), actions), msg,
    h('div', {class: 'cols'}, h('section', null, facts), h('section', null, h('h2', null, 'Next runs'), nextList)),
    h('h2', null, 'Run history'), runTable];
}

// ---- create and edit

async function formPage(id) {
  const j = id ? await api('GET', '/api/v1/jobs/' + id) : null;
  const sched = (j && j.schedule) || {};
  const recurring = !!(j && j.schedule);
  let timingDirty = !j;

  const fieldErr = (field) => h('span', {class: 'field-error', 'data-error-for': field, hidden: true});
  const row = (label, field, input, hint) => h('div', {class: 'row', 'data-field': field},
    h('label', {for: input.id}, label), input, hint ? h('span', {class: 'hint'}, hint) : null, fieldErr(field));

  const name = h('input', {id: 'name', name: 'name', required: true, value: j ? j.name : ''});
  const type = h('select', {id: 'type', name: 'type', disabled: !!j}, TYPES.map((t) => h('option', {value: t, selected: j ? j.type === t : t === 'webhook'}, t)));
  const payload = h('textarea', {id: 'payload', name: 'payload', rows: 7, spellcheck: 'false'});
  payload.value = JSON.stringify(j ? j.payload : PAYLOADS.webhook, null, 2);
  let payloadTouched = !!j;
  payload.addEventListener('input', () => { payloadTouched = true; });
  type.addEventListener('change', () => { if (!payloadTouched) payload.value = JSON.stringify(PAYLOADS[type.value], null, 2); });

  const kindOneoff = h('input', {type: 'radio', name: 'kind', id: 'kind-oneoff', value: 'oneoff', checked: !recurring});
  const kindRecurring = h('input', {type: 'radio', name: 'kind', id: 'kind-recurring', value: 'recurring', checked: recurring});
  const soon = new Date(Date.now() + 60000);
  soon.setMilliseconds(0);
  const runAt = h('input', {type: 'datetime-local', id: 'run_at', name: 'run_at', step: 1,
    value: localInput(j && j.run_at ? new Date(j.run_at) : soon)});
  const ruleKind = h('select', {id: 'rule-kind'}, ['cron', 'rrule'].map((k) => h('option', {value: k, selected: sched.rrule ? k === 'rrule' : k === 'cron'}, k === 'cron' ? 'cron' : 'RRULE')));
  const expr = h('input', {id: 'expr', name: 'expr', placeholder: '*/5 * * * *', value: sched.rrule || sched.cron || ''});
  const zone = h('input', {id: 'timezone', name: 'timezone', list: 'zones', value: sched.timezone || browserZone});
  const zones = h('datalist', {id: 'zones'}, (Intl.supportedValuesOf ? Intl.supportedValuesOf('timeZone') : [browserZone]).map((z) => h('option', {value: z})));
  const preview = h('ol', {class: 'next', id: 'preview'});
  const unsupported = sched.every ? h('p', {class: 'hint'}, `This job recurs "every ${sched.every}"; editing its timing here replaces that with a cron or RRULE.`) : null;

  const oneoffBox = h('div', {class: 'timing', id: 'oneoff-box'},
    row('Run at', 'run_at', runAt, `in your time zone, ${browserZone}; sent with its offset and stored in UTC`));
  const recurringBox = h('div', {class: 'timing', id: 'recurring-box'}, unsupported,
    h('div', {class: 'row', 'data-field': 'schedule'}, h('label', {for: 'rule-kind'}, 'Rule'), ruleKind, fieldErr('schedule')),
    row('Expression', 'schedule.expr', expr, 'cron: 5 fields, or 6 with seconds first; RRULE: FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0'),
    row('Time zone', 'schedule.timezone', zone), zones,
    h('h3', null, 'Next 10 runs'), preview);
  const showKind = () => {
    oneoffBox.hidden = !kindOneoff.checked;
    recurringBox.hidden = !kindRecurring.checked;
  };
  showKind();

  const priority = h('input', {type: 'number', id: 'priority', name: 'priority', value: j ? j.priority : 0});
  const retries = h('input', {type: 'number', id: 'max_retries', name: 'max_retries', min: 0, value: j ? j.max_retries : 3});
  const timeout = h('input', {id: 'timeout', name: 'timeout', value: j ? j.timeout : '30s'});
  const general = h('p', {class: 'error', role: 'alert', id: 'form-error', hidden: true});

  const scheduleBody = () => ({[ruleKind.value]: expr.value.trim(), timezone: zone.value.trim() || 'UTC'});

  let previewSeq = 0;
  const refreshPreview = async () => {
    if (!kindRecurring.checked) return;
    const seq = ++previewSeq;
    const err = form.querySelector('[data-error-for="schedule.expr"]');
    if (!expr.value.trim()) {
      preview.replaceChildren(h('li', {class: 'empty'}, 'Type a rule to see its next runs.'));
      return;
    }
    try {
      const r = await api('POST', '/api/v1/schedules/preview', {schedule: scheduleBody(), n: 10});
      if (seq !== previewSeq) return;
      err.hidden = true;
      preview.replaceChildren(...r.next.map((n) => h('li', null, n.at)));
    } catch (e) {
      if (seq !== previewSeq) return;
      preview.replaceChildren();
      showFieldError(form, e, general);
    }
  };
  let debounce = 0;
  const onTiming = () => {
    timingDirty = true;
    showKind();
    clearTimeout(debounce);
    debounce = setTimeout(refreshPreview, 250);
  };
  for (const el of [kindOneoff, kindRecurring, ruleKind, expr, zone, runAt]) {
    el.addEventListener('input', onTiming);
    el.addEventListener('change', onTiming);
  }

  const form = h('form', {class: 'job-form', id: 'job-form', novalidate: true, onsubmit: async (ev) => {
    ev.preventDefault();
    for (const e of form.querySelectorAll('.field-error')) e.hidden = true;
    general.hidden = true;
    const body = {name: name.value.trim()};
    try {
      body.payload = JSON.parse(payload.value);
    } catch (e) {
      showFieldError(form, {field: 'payload', message: 'is not valid JSON: ' + e.message}, general);
      return;
    }
    if (!j) body.type = type.value;
    if (timingDirty) {
      if (kindOneoff.checked) {
        const d = new Date(runAt.value);
        if (isNaN(d)) {
          showFieldError(form, {field: 'run_at', message: 'pick a date and time'}, general);
          return;
        }
        body.run_at = offsetISO(d);
      } else {
        body.schedule = scheduleBody();
      }
    }
    body.priority = Number(priority.value);
    body.max_retries = Number(retries.value);
    body.timeout = timeout.value.trim();
    try {
      const saved = j ? await api('PATCH', '/api/v1/jobs/' + j.id, body) : await api('POST', '/api/v1/jobs', body);
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
    h('label', {class: 'inline'}, kindOneoff, ' One-off'), h('label', {class: 'inline'}, kindRecurring, ' Recurring'),
    oneoffBox, recurringBox),
  h('details', {open: !!j}, h('summary', null, 'Retries, timeout, priority'),
    row('Max retries', 'max_retries', retries), row('Timeout', 'timeout', timeout, 'a Go duration, 100ms to 1h'),
    row('Priority', 'priority', priority, 'higher first among jobs due at the same millisecond')),
  general,
  h('div', {class: 'actions'}, h('button', {type: 'submit', id: 'save', class: 'primary'}, j ? 'Save' : 'Create job'),
    h('a', {href: j ? '#/jobs/' + j.id : '#/jobs', class: 'button'}, 'Back')));
  mount(form);
  refreshPreview();
}

// showFieldError puts an API error next to the field it names: the most
// specific element whose data-field is the field or a prefix of it
// ("schedule.cron" lands on the expression), else in the general box.
function showFieldError(form, err, general) {
  let field = err.field || '';
  if (field === 'schedule.cron' || field === 'schedule.rrule') field = 'schedule.expr';
  while (field) {
    const el = form.querySelector(`[data-error-for="${CSS.escape(field)}"]`);
    if (el) {
      el.textContent = `${err.field} ${err.message}`;
      el.hidden = false;
      return;
    }
    const i = field.lastIndexOf('.');
    field = i < 0 ? '' : field.slice(0, i);
  }
  general.textContent = (err.field ? err.field + ' ' : '') + err.message;
  general.hidden = false;
}

// ---- system (administrators)

async function systemPage() {
  const view = h('div', {id: 'system'});
  mount(h('h1', null, 'System'), view);
  const draw = async () => view.replaceChildren(...systemView(await api('GET', '/api/v1/system')));
  await draw();
  timers.push(setInterval(() => draw().catch(() => null), 5000));
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
      h('td', null, w.pending), h('td', null, fmtMS(w.idle_ms)))) : h('tr', null, h('td', {colspan: 4, class: 'empty'}, 'No workers have joined the group.'))));

  const ago = (iso) => new Date(sys.generated_at) - new Date(iso);
  const schedulers = h('table', {class: 'workers', id: 'schedulers'},
    h('thead', null, h('tr', null, ['Scheduler', 'State', 'Role', 'Last heartbeat'].map((t) => h('th', null, t)))),
    h('tbody', null, sys.schedulers.length ? sys.schedulers.map((s) => h('tr', null,
      h('td', null, s.name), h('td', null, ago(s.last_seen) < 5000 ? badge('live') : badge('gone')),
      h('td', null, s.leader ? 'loader (lock holder)' : 'publisher'), h('td', null, fmtMS(ago(s.last_seen)) + ' ago')))
      : h('tr', null, h('td', {colspan: 4, class: 'empty'}, 'No scheduler has reported in the last hour.'))));

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

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('signout').addEventListener('click', signOut);
  window.addEventListener('hashchange', route);
  route();
});
