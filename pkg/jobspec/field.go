package jobspec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/strictjson"
)

// A Field is one field of a job, declared once: its JSON name, its OpenAPI
// schema, how a request sets it and what it is when a request leaves it out,
// how a view shows it, what the audit log keeps of it, and its columns in
// Postgres's jobs table. Everything that lists a job's fields (the store's
// column lists, decoding and validation of POST, PATCH and PUT, the views,
// the OpenAPI document, the dry run's diff and the audit log) walks Fields;
// adding a field is adding its entry in fields.go, its validation and its
// tests.
type Field struct {
	// Name is the field's JSON name in requests, views, diffs and the audit
	// log; for a column only tock uses, the column's name.
	Name string
	// Schema is the field's OpenAPI schema in requests (JobSpec, JobPatch),
	// a JSON object; "" for a field requests cannot set.
	Schema string
	// ViewSchema is its schema in a job's view (Job); "" for a field views
	// do not show.
	ViewSchema string
	// Default is the value, as JSON, that a create or a replace gives the
	// field when the request leaves it out, and that a request giving it
	// empty ("", {}) returns it to; "" for a required field or a timing one.
	Default string
	// Example and Other are two different valid values, as JSON, for the
	// documentation and for the tests that walk every field.
	Example, Other string

	// Required fields must be given on create and replace.
	Required bool
	// Fixed fields are set when the job is created and never change: PATCH
	// refuses them and a replace must repeat them.
	Fixed bool
	// Timing fields say when the job runs; they are read together (see
	// timing) and replace a job's timing as a whole.
	Timing bool
	// Internal fields are columns only tock itself uses.
	Internal bool
	// Omittable fields are left out of a view when they have no value
	// (a one-off job's schedule, a job without a key).
	Omittable bool

	// parse validates a value a request gives and returns what sets it.
	parse func(raw json.RawMessage, p *parser) (applier, error)
	// show is the field's value in a view; ok false leaves it out.
	show func(j *job.Job, x *ViewContext) (v any, ok bool)
	// audit is what the audit log keeps of the field; nil keeps its view.
	audit func(j *job.Job) any
	// unaudited fields are never recorded (tock's own bookkeeping, or what
	// every entry says anyway).
	unaudited bool

	// Columns are the field's columns in the jobs table.
	Columns []Column

	// dflt applies Default: parsed once, when the table is checked.
	dflt applier
}

// applier sets a parsed value on a job, under its row lock for an edit.
type applier func(j *job.Job, a *applyState) error

// applyState is what the appliers of one request share.
type applyState struct {
	mode Mode
	now  time.Time
	// started says whether any run of the job exists.
	started bool
	// timingChanged is set once the job's timing was replaced.
	timingChanged bool
	// jitterChanged is set once the job's jitter was replaced, and
	// oldOffset is the offset it had (settleJitter).
	jitterChanged bool
	oldOffset     time.Duration
}

// Mode is what a request does to a job's fields.
type Mode int

const (
	// Create makes a new job: a field left out takes its default.
	Create Mode = iota
	// Patch edits a job: a field left out keeps its value.
	Patch
	// Replace gives a job a new definition (PUT by key): a field left out
	// goes back to its default.
	Replace
)

func (m Mode) String() string {
	switch m {
	case Patch:
		return "patch"
	case Replace:
		return "replace"
	}
	return "create"
}

// Input reports whether a request in mode may give the field.
func (f *Field) Input(m Mode) bool {
	if f.parse == nil {
		return false
	}
	return m != Patch || !f.Fixed
}

// Shown reports whether views show the field.
func (f *Field) Shown() bool { return f.show != nil }

// Column is one column of the jobs table: how it is read, and what a job
// writes into it.
type Column struct {
	Name string
	// Read is the expression that selects it; "" is Name.
	Read string
	// Fixed columns are written when the job is inserted and never updated.
	Fixed bool
	// value is what j writes into the column.
	value func(j *job.Job) any
	// scan returns where a row's value goes, and what to do once it is
	// there (nil: nothing).
	scan func(j *job.Job) (dest any, then func() error)
}

// Value is what j writes into the column.
func (c *Column) Value(j *job.Job) any { return c.value(j) }

// Scan returns the destination of the column's value for j, and what
// finishes it once scanned (nil when nothing does).
func (c *Column) Scan(j *job.Job) (any, func() error) { return c.scan(j) }

// Readable reports whether a job is read from the column: some (its
// partition key, who claimed it) are only written.
func (c *Column) Readable() bool { return c.scan != nil }

// Select is the column's read expression.
func (c *Column) Select() string {
	if c.Read != "" {
		return c.Read
	}
	return c.Name
}

// Columns returns every column of the jobs table that a job reads and
// writes, in the order of Fields.
func Columns() []*Column {
	var out []*Column
	for _, f := range Fields {
		for i := range f.Columns {
			out = append(out, &f.Columns[i])
		}
	}
	return out
}

// Lookup returns the field named name.
func Lookup(name string) (*Field, bool) {
	f, ok := byName[name]
	return f, ok
}

// byName indexes Fields by name.
var byName = func() map[string]*Field {
	m := make(map[string]*Field, len(Fields))
	for _, f := range Fields {
		if !f.Internal {
			m[f.Name] = f
		}
	}
	return m
}()

// init checks the table and parses each default once: a default that does
// not parse is a bug in the table, found at start rather than at the first
// request that leaves the field out.
func init() {
	for _, f := range Fields {
		if f.Default == "" || f.parse == nil {
			continue
		}
		a, err := f.parse(json.RawMessage(f.Default), &parser{mode: Create, lim: DefaultLimits})
		if err != nil {
			panic(fmt.Sprintf("jobspec: the default of %s does not parse: %v", f.Name, err))
		}
		f.dflt = a
	}
}

// decodeValue reads one field's value into v, naming the field in its
// errors: a plain string or integer directly, other strings, numbers, maps
// and slices with encoding/json, and a struct strictly (no unknown field).
// A request is mostly strings and small numbers; reading each through its
// own json.Decoder doubled what a bulk create costs.
func decodeValue(name string, raw json.RawMessage, v any) error {
	switch p := v.(type) {
	case *string:
		if s, ok := strictjson.PlainString(raw); ok {
			*p = s
			return nil
		}
		return strictjson.Unmarshal(raw, v, name)
	case *job.Type:
		if s, ok := strictjson.PlainString(raw); ok {
			*p = job.Type(s)
			return nil
		}
		return strictjson.Unmarshal(raw, v, name)
	case *int:
		if n, err := strconv.Atoi(string(raw)); err == nil {
			*p = n
			return nil
		}
		return strictjson.Unmarshal(raw, v, name)
	case **time.Time:
		if s, ok := strictjson.PlainString(raw); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				*p = &t
				return nil
			}
		}
		return strictjson.Unmarshal(raw, v, name)
	case *map[string]string:
		return strictjson.Unmarshal(raw, v, name)
	}
	return strictDecode(raw, v, name)
}

// empty reports whether raw is a value that returns a field to its default:
// "" or {}.
func empty(raw json.RawMessage) bool {
	s := string(raw)
	return s == `""` || s == `{}`
}
