package jobspec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/secretbox"
	"github.com/tockhq/tock/pkg/strictjson"
)

// Request is a job's fields as the body of POST /api/v1/jobs, PATCH
// /api/v1/jobs/{id} or PUT /api/v1/jobs/by-key/{key} gives them: each known
// field that is present and not null, still as raw JSON. Decode reads one;
// Build, Prepare and Replace turn it into a job or a change of one.
type Request struct {
	mode   Mode
	fields []member
	// extra are the keys the caller reads itself (an administrator's
	// owner), with their values.
	extra []member
}

// member is one field a request gives, by its name.
type member struct {
	name  string
	value json.RawMessage
}

// get returns the value the request gives for name.
func (r *Request) get(name string) (json.RawMessage, bool) {
	for _, m := range r.fields {
		if m.name == name {
			return m.value, true
		}
	}
	return nil, false
}

// strictDecode is strictjson.Decode, the one reader of a field's value.
func strictDecode(raw []byte, v any, prefix string) error { return strictjson.Decode(raw, v, prefix) }

// Decode reads the body of a request in mode: a JSON object whose keys are
// fields that mode takes (Field.Input), each at most once. A field given as
// null counts as left out. A key no field of mode has is refused with a
// *job.FieldError ("is not a known field"), and so is a body that is not
// one JSON object. The values are checked by Build, Prepare or Replace.
// extra names keys of the request's own, which are not job fields (the
// owner of an administrator's create): Extra returns them.
func Decode(raw []byte, mode Mode, extra ...string) (*Request, error) {
	members, err := strictjson.Object(raw)
	if err != nil {
		return nil, err
	}
	return decode(members, mode, extra)
}

// DecodePart is Decode for raw that is part of a body already read as
// well-formed JSON, such as one job of a bulk create: it does not check
// raw's syntax a second time.
func DecodePart(raw []byte, mode Mode, extra ...string) (*Request, error) {
	members, err := strictjson.Members(raw)
	if err != nil {
		return nil, err
	}
	return decode(members, mode, extra)
}

func decode(members []strictjson.Member, mode Mode, extra []string) (*Request, error) {
	r := &Request{mode: mode, fields: make([]member, 0, len(members))}
	var unknown []string
	seen := make([]string, 0, len(members))
	for _, m := range members {
		// A field's name is its table entry's: no copy of the key.
		var name string
		if k, ok := m.Plain(); ok {
			if f, known := byName[string(k)]; known {
				name = f.Name
			}
		}
		if name == "" {
			name = m.Name()
		}
		if slices.Contains(seen, name) {
			return nil, &job.FieldError{Field: name, Message: "is given twice"}
		}
		seen = append(seen, name)
		if slices.Contains(extra, name) {
			r.extra = append(r.extra, member{name, m.Value})
			continue
		}
		f, ok := byName[name]
		if !ok || !f.Input(mode) {
			unknown = append(unknown, name)
			continue
		}
		if !bytes.Equal(m.Value, []byte("null")) {
			r.fields = append(r.fields, member{name, m.Value})
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		msg := "is not a known field"
		if f, ok := byName[unknown[0]]; ok && f.Fixed && mode == Patch {
			msg = "cannot change once the job exists"
		}
		return nil, &job.FieldError{Field: unknown[0], Message: msg}
	}
	return r, nil
}

// Extra returns the value of key, one of the extra keys Decode was given,
// as JSON; false when the request leaves it out or gives null.
func (r *Request) Extra(key string) (json.RawMessage, bool) {
	for _, m := range r.extra {
		if m.name == key && !bytes.Equal(m.value, []byte("null")) {
			return m.value, true
		}
	}
	return nil, false
}

// NewRequest is a request of mode made of values, each encoded as JSON: for
// callers that hold a job's fields in Go rather than as a body (tests,
// generate-load). It is checked as Decode checks a body.
func NewRequest(mode Mode, values map[string]any) (*Request, error) {
	raw, err := json.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return Decode(raw, mode)
}

// Has reports whether the request gives the field name.
func (r *Request) Has(name string) bool {
	_, ok := r.get(name)
	return ok
}

// Raw returns the value the request gives for name, as JSON.
func (r *Request) Raw(name string) (json.RawMessage, bool) {
	return r.get(name)
}

// Schedules reports whether the request gives a schedule: only then does
// checking it cost enough to queue for the caller's turn.
func (r *Request) Schedules() bool { return r.Has("schedule") }

// String names the fields the request gives, for logs and tests.
func (r *Request) String() string {
	names := make([]string, 0, len(r.fields))
	for _, m := range r.fields {
		names = append(names, m.name)
	}
	slices.Sort(names)
	return r.mode.String() + "(" + strings.Join(names, ", ") + ")"
}

// parser is what the fields of one request share while they are checked.
type parser struct {
	mode   Mode
	now    time.Time
	lim    Limits
	budget *schedule.Budget
	// typ is the job's type: the request's on create, the job's otherwise.
	typ job.Type
	// cur is the job a patch or replace changes, read without its lock.
	cur *job.Job
	// timing collects the timing fields given.
	timing timingInput
	// owner is the job's owner, whose secrets these are.
	owner [16]byte
	// opened are cur's secrets in clear, once needed (curSecrets).
	opened map[string]string
	// drafts are what the payload and notify bring to the job's secrets.
	drafts []*secretDraft
}

// Change is a request checked against the job it changes (or creates):
// everything that can fail on the input, or cost more than a few
// comparisons (compiling a schedule), is done; Apply then sets the job's
// fields under its row lock.
type Change struct {
	mode  Mode
	now   time.Time
	steps []applier
	// timing is the new timing, when the request gives one.
	timing *job.Job
	// secrets, when the request gives a payload or a notify, are what they
	// bring to the job's secrets; box seals them.
	secrets []*secretDraft
	box     *secretbox.Box
	// touched says the payload or notify is set, so the job's secrets are
	// made again from them.
	touched bool
}

// Timing is the new timing the change gives the job (RunAt, Schedule,
// Timezone, DueAt, Occurrences, PerHour), or nil when it keeps its own.
func (c *Change) Timing() *job.Job { return c.timing }

// check reads every field the request gives, in the order of Fields, and
// for create and replace the defaults of those it leaves out.
func (r *Request) check(p *parser) (*Change, error) {
	c := &Change{mode: p.mode, now: p.now, steps: make([]applier, 0, len(Fields))}
	for _, f := range Fields {
		if f.Timing {
			if raw, ok := r.get(f.Name); ok {
				if _, err := f.parse(raw, p); err != nil {
					return nil, err
				}
			}
			if f.Name == lastTimingField {
				step, err := p.timingStep()
				if err != nil {
					return nil, err
				}
				if step != nil {
					// First: the other steps (priority) need to know
					// whether the timing changed.
					// In place: the slice keeps the capacity of every
					// field's step, so the appends below never grow it.
					c.steps = append(c.steps, nil)
					copy(c.steps[1:], c.steps)
					c.steps[0] = step
					c.timing = p.timing.next
				}
			}
			continue
		}
		if f.parse == nil || !f.Input(p.mode) || f.Fixed && p.mode == Replace {
			continue
		}
		raw, given := r.get(f.Name)
		reset := given && empty(raw) && f.dflt != nil
		switch {
		case given && !reset:
			c.touched = c.touched || f == payloadField || f == notifyField
			a, err := f.parse(raw, p)
			if err != nil {
				return nil, err
			}
			if a != nil {
				c.steps = append(c.steps, a)
			}
		case f.Required && p.mode != Patch:
			return nil, invalid(f.Name, "is required")
		case f.dflt != nil && (reset || p.mode != Patch):
			c.touched = c.touched || f == notifyField
			c.steps = append(c.steps, f.dflt)
		}
	}
	c.secrets, c.box = p.drafts, p.lim.Box
	return c, nil
}

// newJob is the job a create starts from, before its fields are set.
func newJob(owner [16]byte, now time.Time) *job.Job {
	return &job.Job{
		ID:        job.NewID(),
		Owner:     owner,
		Status:    job.StatusScheduled,
		CreatedAt: now,
		UpdatedAt: now,
	}
}

// Build validates a create and returns the job it describes, owned by
// owner, as of now. Every error is a *job.FieldError naming the offending
// field. Its schedule work spends from b: a rule that needs more is refused
// on its field as too expensive to evaluate, and the end of b's context
// ends the work (its error is returned as it is).
func (r *Request) Build(b *schedule.Budget, owner [16]byte, now time.Time, lim Limits) (*job.Job, error) {
	if r.mode != Create && r.mode != Replace {
		return nil, fmt.Errorf("%w: a %s request cannot create a job", job.ErrInvalid, r.mode)
	}
	now = now.UTC().Truncate(time.Millisecond)
	if b == nil {
		b = schedule.RequestBudget(context.Background())
	}
	p := &parser{mode: Create, now: now, lim: lim, budget: b, owner: owner}
	c, err := r.check(p)
	if err != nil {
		return nil, err
	}
	j := newJob(owner, now)
	if err := c.Apply(j, false); err != nil {
		return nil, err
	}
	return j, nil
}

// Prepare checks a patch or a replace of job cur, read without its lock:
// only its type, and for a replace its timing, are used, since they decide
// how the values are read; the Change is then applied to the job as it is
// under its lock. A new schedule is compiled, and its first occurrence
// found, within b.
func (r *Request) Prepare(b *schedule.Budget, cur *job.Job, now time.Time, lim Limits) (*Change, error) {
	if r.mode == Create {
		return nil, fmt.Errorf("%w: a create request changes no job", job.ErrInvalid)
	}
	now = now.UTC().Truncate(time.Millisecond)
	if b == nil {
		b = schedule.RequestBudget(context.Background())
	}
	p := &parser{mode: r.mode, now: now, lim: lim, budget: b, typ: cur.Type, cur: cur, owner: cur.Owner}
	return r.check(p)
}

// Apply sets the job's fields as checked. For a create, started is false
// and j is new; for an edit, j is the job under its row lock, and started
// says whether any run of it exists: a one-off job that has started can no
// longer move in time. A change of timing or priority moves the job to a
// new generation, so whatever Redis holds for it under the old one never
// runs.
func (c *Change) Apply(j *job.Job, started bool) error {
	if c.mode != Create && j.Status != job.StatusScheduled && j.Status != job.StatusPaused {
		return fmt.Errorf("%w: a %s job cannot be edited", job.ErrConflict, j.Status)
	}
	a := &applyState{mode: c.mode, now: c.now, started: started}
	for _, step := range c.steps {
		if err := step(j, a); err != nil {
			return err
		}
	}
	if err := settleJitter(j, a); err != nil {
		return err
	}
	if j.Overlap != "" && !j.Recurring() {
		return invalid("overlap", "applies to recurring jobs only")
	}
	if j.Debounce != nil && j.Recurring() {
		return invalid("debounce", "applies to one-off jobs only")
	}
	if len(j.SkipCalendars) > 0 && !j.Recurring() {
		return invalid("skip_calendars", "applies to recurring jobs only")
	}
	if j.SLO.SilentAfter > 0 && !j.Recurring() {
		return invalid("slo.silent_after", "applies to recurring jobs only")
	}

	if a.timingChanged && c.mode != Create && j.DueAt.IsZero() {
		return fmt.Errorf("%w: nothing left to run", job.ErrInvalid)
	}
	switch {
	case c.mode == Create:
		// Every credential of a new job was just given in clear.
		all := map[string]string{}
		for _, d := range c.secrets {
			maps.Copy(all, d.fresh)
		}
		return seal(c.box, j, all)
	case c.touched:
		return sealSecrets(c.box, j, c.secrets)
	}
	return nil
}

// With returns the request with the field name set to value (as JSON), as
// if the body gave it: PUT by key gives the job the key of its path.
func (r *Request) With(name string, value any) (*Request, error) {
	f, ok := byName[name]
	if !ok || !f.Input(r.mode) {
		return nil, fmt.Errorf("%w: %s is not a field a %s sets", job.ErrInvalid, name, r.mode)
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", name, err)
	}
	out := &Request{mode: r.mode, extra: r.extra}
	for _, m := range r.fields {
		if m.name != name {
			out.fields = append(out.fields, m)
		}
	}
	out.fields = append(out.fields, member{name, raw})
	return out, nil
}

// debounceFields are what a debounced create brings to the pending job
// that holds its key: its payload (and so its credentials), its timing, its jitter and
// its debounce.
var debounceFields = []string{"payload", "run_at", "delay", "run_on", "timezone", "debounce", "jitter"}

// Debounced returns the debounce a create or replace gives (nil for none)
// and the request it runs as: one that gives no timing of its own runs the
// window after its create (a delay of the window).
func (r *Request) Debounced() (*Request, *job.Debounce, error) {
	raw, ok := r.get("debounce")
	if !ok {
		return r, nil, nil
	}
	d, err := ParseDebounce(raw)
	if err != nil || d == nil {
		return r, nil, err
	}
	for _, name := range []string{"run_at", "delay", "run_on", "schedule"} {
		if r.Has(name) {
			return r, d, nil
		}
	}
	out, err := r.With("delay", d.Window.String())
	return out, d, err
}

// DebouncePatch is the patch that folds the debounced create r into the
// pending job that holds its key: r's payload, timing and debounce.
func (r *Request) DebouncePatch() *Request {
	out := &Request{mode: Patch}
	for _, m := range r.fields {
		if slices.Contains(debounceFields, m.name) {
			out.fields = append(out.fields, m)
		}
	}
	return out
}
