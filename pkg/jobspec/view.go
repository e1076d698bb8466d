package jobspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/secretbox"
)

// ViewContext is what a view needs beyond the job itself.
type ViewContext struct {
	// Next is the job's next occurrence, zero when none.
	Next time.Time
	// Box fingerprints the credentials of a job stored before they were
	// sealed, which views hide all the same.
	Box *secretbox.Box
}

// View is a job as the API shows it: its fields in the order of Fields,
// each as Field.show says, encoded as one JSON object.
type View struct {
	j *job.Job
	x ViewContext
}

// NewView shows j as of x.
func NewView(j *job.Job, x ViewContext) View { return View{j: j, x: x} }

// Job is the job shown.
func (v View) Job() *job.Job { return v.j }

// MarshalJSON writes the view's fields in order.
func (v View) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(512 + len(v.j.Payload))
	buf.WriteByte('{')
	first := true
	for _, f := range Fields {
		if f.show == nil {
			continue
		}
		val, ok := f.show(v.j, &v.x)
		if !ok {
			continue
		}
		b, err := encodeValue(val)
		if err != nil {
			return nil, fmt.Errorf("view of %s: %w", f.Name, err)
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.WriteByte('"')
		buf.WriteString(f.Name)
		buf.WriteString(`":`)
		buf.Write(b)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// encodeValue writes one field's value; the common kinds without
// reflection.
func encodeValue(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return []byte("null"), nil
	case json.RawMessage:
		if len(x) == 0 {
			return []byte("null"), nil
		}
		return x, nil
	case Instant:
		return x.MarshalJSON()
	}
	return json.Marshal(v)
}

// values are a view's fields as JSON, by name: what diffs and the audit
// log compare.
func values(j *job.Job, x *ViewContext, keep func(f *Field) bool) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, f := range Fields {
		if f.show == nil || !keep(f) {
			continue
		}
		val, ok := f.show(j, x)
		if !ok {
			out[f.Name] = nil
			continue
		}
		b, err := encodeValue(val)
		if err != nil {
			continue
		}
		out[f.Name] = b
	}
	return out
}

// FieldChange is one field whose value differs between two versions of a
// job, as views show them: Old or New is null when that side has none.
type FieldChange struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old"`
	New   json.RawMessage `json:"new"`
}

// Diff lists the fields a request can set whose views differ between
// before and after, in the order of Fields, leaf by leaf within objects:
// what a dry run answers. A credential shows as its fingerprint, which
// changes with its value.
func Diff(before, after *job.Job, box *secretbox.Box) []FieldChange {
	settable := func(f *Field) bool { return f.parse != nil }
	x := &ViewContext{Box: box}
	b, a := values(before, x, settable), values(after, x, settable)
	var out []FieldChange
	for _, f := range Fields {
		if !settable(f) || f.show == nil {
			continue
		}
		out = diffValue(f.Name, b[f.Name], a[f.Name], out)
	}
	return out
}

// diffValue appends the changes between two values of path: leaf by leaf
// within objects (schedule.cron, labels.team,
// payload.headers.Authorization), whole otherwise.
func diffValue(path string, old, cur json.RawMessage, out []FieldChange) []FieldChange {
	if sameJSON(old, cur) {
		return out
	}
	var om, cm map[string]json.RawMessage
	if json.Unmarshal(old, &om) != nil || json.Unmarshal(cur, &cm) != nil || om == nil || cm == nil {
		return append(out, FieldChange{Field: path, Old: orNull(old), New: orNull(cur)})
	}
	keys := make([]string, 0, len(om)+len(cm))
	for k := range om {
		keys = append(keys, k)
	}
	for k := range cm {
		if _, ok := om[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = diffValue(path+"."+k, om[k], cm[k], out)
	}
	return out
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// sameJSON compares two values by meaning: the same JSON, or both absent
// or null.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || string(a) == "null" {
		return len(b) == 0 || string(b) == "null"
	}
	return jsonEqual(a, b)
}

// Created is what the audit log keeps of a new job: every field a request
// sets, as its view shows it, but the payload (recorded as given, never by
// value) and the alerting (its events and kind of destination).
func Created(j *job.Job) map[string]any {
	out := map[string]any{"owner": j.Owner}
	x := &ViewContext{}
	for _, f := range Fields {
		if f.show == nil || f.unaudited || f.parse == nil && f.Name != "status" {
			continue
		}
		if f.audit != nil {
			if f == payloadField {
				continue
			}
			if v := f.audit(j); v != nil {
				out[f.Name] = v
			}
			continue
		}
		if val, ok := f.show(j, x); ok && val != nil {
			out[f.Name] = val
		}
	}
	delete(out, "status")
	return out
}

// Changed is what the audit log keeps of an edit: each field whose view
// changed, as {"from", "to"}; the payload only as "changed", the alerting
// by its shape.
func Changed(before, after *job.Job) map[string]any {
	out := map[string]any{}
	x := &ViewContext{}
	audited := func(f *Field) bool { return !f.unaudited }
	b, a := values(before, x, audited), values(after, x, audited)
	for _, f := range Fields {
		if f.show == nil || f.unaudited || sameJSON(b[f.Name], a[f.Name]) {
			continue
		}
		switch {
		case f == payloadField:
			out[f.Name] = "changed"
		case f.audit != nil:
			out[f.Name] = map[string]any{"from": f.audit(before), "to": f.audit(after)}
		default:
			out[f.Name] = map[string]any{"from": orNull(b[f.Name]), "to": orNull(a[f.Name])}
		}
	}
	return out
}

// validType checks a job's type is one of jobtype's.
func validType(t job.Type) error {
	if t == "" {
		return invalid("type", "is required")
	}
	if _, ok := jobtype.Lookup(t); !ok {
		return invalid("type", "must be one of %s", strings.Join(jobtype.Names(), ", "))
	}
	return nil
}
