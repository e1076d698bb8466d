package jobspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/secretbox"
)

// Write-only secrets. A payload's or a notify's credentials (see
// jobtype.Spot) are swapped, as a request is read, for their fingerprints:
// the payload and notify columns, the views, the audit log and the
// idempotency store only ever hold those. The values themselves are kept
// in the job's secrets column, sealed under the operator key (Limits.Box),
// as one JSON object from fingerprint to value, and put back by the worker
// (Reveal). A request may send a fingerprint back in the place it was
// shown (a job read, edited and sent again, as the dashboard's form does):
// it keeps the secret that is there, as long as the credential's
// destination (the URL it is sent to) is the same; anywhere else it is
// refused, so a secret can never be copied into another job or sent to
// another host by someone who cannot read it.

// secretDraft is what a payload or notify of a request brings to the job's
// secrets: the values given in clear, by the fingerprint now in their
// place, and the fingerprints given back to keep.
type secretDraft struct {
	fresh map[string]string
	kept  []string
}

// redact swaps the credentials found in sec for fingerprints: a value in
// clear gets the fingerprint the job already shows for the same value (so
// that sending the same secret again changes nothing), or a new one; a
// fingerprint is kept only where prior (the job's own, as stored) shows it
// at the same path with the same destination. field prefixes the spots'
// paths in errors ("payload").
func (p *parser) redact(field string, sec *jobtype.Secrets, prior *jobtype.Secrets) (json.RawMessage, *secretDraft, error) {
	d := &secretDraft{}
	changed := false
	for _, sp := range sec.Spots {
		if jobtype.IsFingerprint(sp.Value) {
			if !keeps(prior, sec.Destination, sp) {
				return nil, nil, invalid(field+"."+sp.Path, "is the fingerprint of a secret: send the secret itself here (a secret stays only in the place, and for the destination, it was given for)")
			}
			d.kept = append(d.kept, sp.Value)
			continue
		}
		fp := p.fingerprint(sp.Value)
		if d.fresh == nil {
			d.fresh = map[string]string{}
		}
		d.fresh[fp] = sp.Value
		sp.Set(fp)
		changed = true
	}
	out, err := sec.Encode(changed)
	if err != nil {
		return nil, nil, fmt.Errorf("encode %s: %w", field, err)
	}
	return out, d, nil
}

// keeps reports whether a fingerprint at sp may keep the secret prior
// holds there: the same path, the same fingerprint, the same destination.
func keeps(prior *jobtype.Secrets, dest string, sp *jobtype.Spot) bool {
	if prior == nil || prior.Destination != dest {
		return false
	}
	for _, q := range prior.Spots {
		if q.Path == sp.Path && q.Value == sp.Value {
			return true
		}
	}
	return false
}

// fingerprint is what the job shows for the secret v: the fingerprint it
// already shows for the same value, or a new one.
func (p *parser) fingerprint(v string) string {
	for fp, old := range p.curSecrets() {
		if old == v {
			return fp
		}
	}
	return p.lim.Box.Fingerprint(v, p.owner[:])
}

// curSecrets are the job's own secrets in clear, opened once; none when
// they cannot be opened (a fingerprint then simply changes).
func (p *parser) curSecrets() map[string]string {
	if p.cur == nil || p.opened != nil {
		return p.opened
	}
	m, err := OpenSecrets(p.lim.Box, p.cur)
	if err != nil {
		m = map[string]string{}
	}
	p.opened = m
	return m
}

// OpenSecrets returns the secrets of j in clear, by fingerprint.
func OpenSecrets(box *secretbox.Box, j *job.Job) (map[string]string, error) {
	if j.Secrets == "" {
		return map[string]string{}, nil
	}
	plain, err := box.Open(j.Secrets, j.Owner[:])
	if err != nil {
		return nil, fmt.Errorf("secrets of job %s: %w", j.ID, err)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(plain), &m); err != nil {
		return nil, fmt.Errorf("secrets of job %s: %w", j.ID, err)
	}
	return m, nil
}

// sealSecrets gives j, once its payload and notify are set, the secrets
// they hold: every credential still in clear in them (a job stored before
// secrets were sealed) is swapped for its fingerprint first, and each
// fingerprint's value comes from this request's drafts, or from the job's
// own secrets for one kept. A fingerprint the job no longer holds (it
// changed meanwhile) is refused.
func sealSecrets(box *secretbox.Box, j *job.Job, drafts []*secretDraft) error {
	found := &secretDraft{fresh: map[string]string{}}
	sec, err := jobtype.SecretsOf(j.Type, j.Payload)
	if err != nil {
		return fmt.Errorf("secrets of the payload: %w", err)
	}
	spots := sec.Spots
	var n *job.Notify
	if j.Notify != nil {
		n = cloneNotify(j.Notify)
		spots = append(spots, notifySecrets(n).Spots...)
	}
	changed := false
	for _, sp := range spots {
		if !jobtype.IsFingerprint(sp.Value) {
			fp := box.Fingerprint(sp.Value, j.Owner[:])
			found.fresh[fp] = sp.Value
			sp.Set(fp)
			changed = true
		}
	}
	if changed {
		if j.Payload, err = sec.Encode(true); err != nil {
			return fmt.Errorf("encode the payload: %w", err)
		}
		j.Notify = n
	}
	drafts = append(drafts, found)
	var old map[string]string
	out := make(map[string]string, len(spots))
	for _, sp := range spots {
		fp := sp.Value
		if _, done := out[fp]; done {
			continue
		}
		v, ok := freshValue(drafts, fp)
		if !ok {
			if old == nil {
				if old, err = OpenSecrets(box, j); err != nil {
					return err
				}
			}
			if v, ok = old[fp]; !ok {
				return invalid("payload", "names a secret the job no longer holds: send the secret itself")
			}
		}
		out[fp] = v
	}
	j.SecretsUnsealed = false
	return seal(box, j, out)
}

// freshValue is the value a request's drafts give for fingerprint fp.
func freshValue(drafts []*secretDraft, fp string) (string, bool) {
	for _, d := range drafts {
		if v, ok := d.fresh[fp]; ok {
			return v, true
		}
	}
	return "", false
}

// seal stores secrets on j, sealed: "" when there are none.
func seal(box *secretbox.Box, j *job.Job, secrets map[string]string) error {
	if len(secrets) == 0 {
		j.Secrets = ""
		return nil
	}
	raw, err := json.Marshal(secrets)
	if err != nil {
		return fmt.Errorf("encode secrets: %w", err)
	}
	sealed, err := box.Seal(string(raw), j.Owner[:])
	if err != nil {
		return fmt.Errorf("seal secrets: %w", err)
	}
	j.Secrets = sealed
	return nil
}

// SealLegacy seals the secrets of a job stored before they were sealed
// (job.Job.SecretsUnsealed): the credentials its payload and notify hold
// in clear are swapped for fingerprints and kept in j.Secrets. It is what
// the dashboard's pass at start does to each such job.
func SealLegacy(box *secretbox.Box, j *job.Job) error { return sealSecrets(box, j, nil) }

// notifySpots are the credentials of a job's alerting: the headers of its
// webhook, or the token of its Slack URL; and where they are sent.
func notifySpots(n *job.Notify) (dest string, spots []*jobtype.Spot) {
	switch {
	case n.Webhook != nil:
		return n.Webhook.URL, jobtype.HeaderSpots("webhook.headers", n.Webhook.Headers)
	case n.Callback != nil:
		return n.Callback.URL, jobtype.HeaderSpots("callback.headers", n.Callback.Headers)
	case n.Slack != nil:
		dest, sp := jobtype.URLTokenSpot("slack.webhook_url", &n.Slack.WebhookURL)
		if sp == nil {
			return dest, nil
		}
		return dest, []*jobtype.Spot{sp}
	}
	return "", nil
}

// cloneNotify copies n deep enough that its spots can be set.
func cloneNotify(n *job.Notify) *job.Notify {
	c := *n
	c.On = slices.Clone(n.On)
	if n.Webhook != nil {
		w := *n.Webhook
		w.Headers = maps.Clone(n.Webhook.Headers)
		c.Webhook = &w
	}
	if n.Callback != nil {
		cb := *n.Callback
		cb.Headers = maps.Clone(n.Callback.Headers)
		c.Callback = &cb
	}
	if n.Slack != nil {
		s := *n.Slack
		c.Slack = &s
	}
	if n.Email != nil {
		e := *n.Email
		e.To = slices.Clone(n.Email.To)
		c.Email = &e
	}
	return &c
}

// notifySecrets are n's credentials as jobtype.Secrets, encoding n.
func notifySecrets(n *job.Notify) *jobtype.Secrets {
	return jobtype.NewSecrets(notifySpots(n))
}

// payloadField is the job's payload; its credentials are write-only.
var payloadField = &Field{
	Name: "payload",
	Schema: `{"anyOf": [{"$ref": "#/components/schemas/WebhookPayload"}, {"$ref": "#/components/schemas/PingPayload"}, {"$ref": "#/components/schemas/SlackPayload"}, {"$ref": "#/components/schemas/EmailPayload"}], ` +
		`"description": "What the job does; its shape is given by ` + "`type`" + `: WebhookPayload, PingPayload, SlackPayload or EmailPayload. At most 64 KiB by default (TOCK_MAX_PAYLOAD_BYTES). Its credentials are write-only: a webhook's header values (but for Accept, Accept-Charset, Accept-Encoding, Accept-Language, Cache-Control, Content-Encoding, Content-Language and Content-Type), a Slack webhook URL's last path segment, a broker URL's password (or a NATS token). Views show a fingerprint in their place (` + "`secret:sha256:<32 hex>`" + `); sending a fingerprint back in its place keeps that secret while the URL it goes to is unchanged."}`,
	ViewSchema: `{"type": "object", "description": "The payload as given, compacted, according to ` + "`type`" + `, with a fingerprint (` + "`secret:sha256:<32 hex>`" + `) in the place of each credential: a webhook's header values (but for Accept, Accept-Charset, Accept-Encoding, Accept-Language, Cache-Control, Content-Encoding, Content-Language and Content-Type), a Slack webhook URL's last path segment, a broker URL's password or NATS token."}`,
	Example:    `{"url": "https://example.com/hook", "method": "POST", "headers": {"Authorization": "Bearer example-token-1"}, "body": {"report": "nightly"}}`,
	Other:      `{"url": "https://example.com/hook2", "method": "PUT", "headers": {"Authorization": "Bearer example-token-2"}, "body": {"report": "weekly"}}`,
	Required:   true,
	parse: func(raw json.RawMessage, p *parser) (applier, error) {
		payload, err := ValidatePayload(p.typ, raw, p.lim)
		if err != nil {
			return nil, err
		}
		sec, err := jobtype.SecretsOf(p.typ, payload)
		if err != nil {
			return nil, fmt.Errorf("secrets of the payload: %w", err)
		}
		var prior *jobtype.Secrets
		if p.cur != nil {
			if prior, err = jobtype.SecretsOf(p.cur.Type, p.cur.Payload); err != nil {
				prior = nil
			}
		}
		payload, d, err := p.redact("payload", sec, prior)
		if err != nil {
			return nil, err
		}
		p.drafts = append(p.drafts, d)
		return func(j *job.Job, _ *applyState) error { j.Payload = payload; return nil }, nil
	},
	show: func(j *job.Job, x *ViewContext) (any, bool) {
		if !j.SecretsUnsealed {
			return json.RawMessage(j.Payload), true
		}
		return json.RawMessage(hideLegacy(x, j, j.Type, j.Payload)), true
	},
	audit: func(*job.Job) any { return "changed" },
	Columns: []Column{
		{Name: "payload",
			value: func(j *job.Job) any { return []byte(j.Payload) },
			scan:  func(j *job.Job) (any, func() error) { return &j.Payload, nil }},
		{Name: "secrets",
			value: func(j *job.Job) any { return j.Secrets },
			scan: func(j *job.Job) (any, func() error) {
				var s *string
				return &s, func() error {
					if s == nil {
						j.SecretsUnsealed = true
					} else {
						j.Secrets = *s
					}
					return nil
				}
			}},
	},
}

// notifyField is the job's alerting; its credentials are write-only.
var notifyField = &Field{
	Name:       "notify",
	Omittable:  true,
	Schema:     `{"$ref": "#/components/schemas/Notify"}`,
	ViewSchema: `{"$ref": "#/components/schemas/Notify"}`,
	Default:    `{"on": []}`,
	Example:    `{"on": ["permanently_failed"], "webhook": {"url": "https://example.com/alerts", "headers": {"Authorization": "Bearer alert-token-1"}}}`,
	Other:      `{"on": ["failed", "recovered"], "slack": {"webhook_url": "https://hooks.slack.com/services/T000/B000/alertsecret2"}}`,
	parse: func(raw json.RawMessage, p *parser) (applier, error) {
		var in *job.Notify
		if err := decodeValue("notify", raw, &in); err != nil {
			return nil, err
		}
		if in == nil {
			return nil, nil
		}
		n, err := ValidNotify(in, p.lim)
		if err != nil {
			return nil, err
		}
		if n != nil {
			var prior *jobtype.Secrets
			if p.cur != nil && p.cur.Notify != nil {
				prior = notifySecrets(cloneNotify(p.cur.Notify))
			}
			_, d, err := p.redact("notify", notifySecrets(n), prior)
			if err != nil {
				return nil, err
			}
			p.drafts = append(p.drafts, d)
		}
		return func(j *job.Job, _ *applyState) error { j.Notify = n; return nil }, nil
	},
	show: func(j *job.Job, x *ViewContext) (any, bool) {
		if j.Notify == nil {
			return nil, false
		}
		if !j.SecretsUnsealed {
			return j.Notify, true
		}
		n := cloneNotify(j.Notify)
		for _, sp := range notifySecrets(n).Spots {
			if !jobtype.IsFingerprint(sp.Value) {
				sp.Set(x.Box.Fingerprint(sp.Value, j.Owner[:]))
			}
		}
		return n, true
	},
	audit: func(j *job.Job) any { return notifyShape(j.Notify) },
	Columns: []Column{jsonColumn("notify", func(j *job.Job) any { return &j.Notify },
		func(j *job.Job) bool { return j.Notify != nil })},
}

// hideLegacy is a payload stored before secrets were sealed, with a
// fingerprint in the place of each credential it holds in clear.
func hideLegacy(x *ViewContext, j *job.Job, t job.Type, payload json.RawMessage) json.RawMessage {
	sec, err := jobtype.SecretsOf(t, payload)
	if err != nil {
		return json.RawMessage(`{}`) // never show what cannot be checked
	}
	changed := false
	for _, sp := range sec.Spots {
		if !jobtype.IsFingerprint(sp.Value) {
			sp.Set(x.Box.Fingerprint(sp.Value, j.Owner[:]))
			changed = true
		}
	}
	out, err := sec.Encode(changed)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return out
}

// notifyShape is what the audit log keeps of a job's alerting: the events
// and the kind of destination.
func notifyShape(n *job.Notify) any {
	if n == nil {
		return nil
	}
	dest := "email"
	switch {
	case n.Webhook != nil:
		dest = "webhook"
	case n.Slack != nil:
		dest = "slack"
	case n.Callback != nil:
		dest = "callback"
	}
	return map[string]any{"on": n.On, "to": dest}
}

// Reveal returns j's payload and notify with their secrets in clear, for
// the worker that delivers them: each fingerprint in a credential's place
// is replaced by the value secrets (OpenSecrets) holds for it. A payload
// stored before secrets were sealed holds them in clear already and comes
// back as it is.
func Reveal(t job.Type, payload json.RawMessage, n *job.Notify, secrets map[string]string) (json.RawMessage, *job.Notify, error) {
	if len(secrets) == 0 {
		return payload, n, nil
	}
	sec, err := jobtype.SecretsOf(t, payload)
	if err != nil {
		return nil, nil, err
	}
	changed, err := put(sec.Spots, secrets)
	if err != nil {
		return nil, nil, err
	}
	out, err := sec.Encode(changed)
	if err != nil {
		return nil, nil, err
	}
	if n != nil {
		n = cloneNotify(n)
		if _, err := put(notifySecrets(n).Spots, secrets); err != nil {
			return nil, nil, err
		}
	}
	return out, n, nil
}

// errSecretMissing: a fingerprint names a secret the job does not hold.
var errSecretMissing = errors.New("a secret of the job is missing")

func put(spots []*jobtype.Spot, secrets map[string]string) (bool, error) {
	changed := false
	for _, sp := range spots {
		if !jobtype.IsFingerprint(sp.Value) {
			continue
		}
		v, ok := secrets[sp.Value]
		if !ok {
			return false, fmt.Errorf("%w (%s)", errSecretMissing, sp.Path)
		}
		sp.Set(v)
		changed = true
	}
	return changed, nil
}
