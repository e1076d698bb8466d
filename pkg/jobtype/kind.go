// Package jobtype holds tock's job types, one file each: a type's payload,
// how the API checks it, an example of it, and the executor that runs one
// attempt of it in the worker. Everything that lists the types (API
// validation, the OpenAPI document, the web form, generate-load) reads them
// from here, so adding a type is its file, its test and one line in kinds.
//
// Executors never touch Postgres or Redis: the worker's consumer loop
// records their outcomes in batches.
package jobtype

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
)

// Kind describes one job type.
type Kind struct {
	Type job.Type
	// Summary says in one line what a job of this type does.
	Summary string
	// Example is a valid payload; the web form starts from it.
	Example any
	// Check validates a payload that is present and within the size limit,
	// against the worker's outbound policy. Every error is a *job.FieldError.
	Check func(raw json.RawMessage, targets outbound.Options) error
	// New returns the type's executor, built from what the worker shares.
	New func(d Deps) Executor
	// Load, if set, is a payload of this type aimed at the URL target, for
	// generate-load; a type without it (a broker's) is not offered there.
	Load func(target string, seq int) any
	// Secrets, if set, finds the credentials of a valid payload (see
	// Spot); a type without it carries none.
	Secrets func(raw json.RawMessage) (*Secrets, error)
}

// kinds are the job types, in the order lists show them. Registering a type
// is adding it here.
var kinds = []*Kind{&Webhook, &Ping, &Slack, &Email, &NATS, &AMQP, &SQS}

// All returns every job type, in the order lists show them.
func All() []*Kind { return slices.Clone(kinds) }

// Lookup returns the job type named t.
func Lookup(t job.Type) (*Kind, bool) {
	for _, k := range kinds {
		if k.Type == t {
			return k, true
		}
	}
	return nil, false
}

// Names returns the names of every job type, in the order lists show them.
func Names() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k.Type)
	}
	return out
}

// Validate checks a payload against its type and returns it compacted.
// maxBytes bounds its size (0: no bound); targets is the worker's outbound
// policy, which user-given addresses must pass.
func Validate(t job.Type, raw json.RawMessage, maxBytes int, targets outbound.Options) (json.RawMessage, error) {
	if t == "" {
		return nil, invalid("type", "is required")
	}
	k, ok := Lookup(t)
	if !ok {
		return nil, invalid("type", "must be one of %s", strings.Join(Names(), ", "))
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, invalid("payload", "is required")
	}
	if maxBytes > 0 && len(raw) > maxBytes {
		return nil, invalid("payload", "is larger than %d bytes", maxBytes)
	}
	if err := k.Check(raw, targets); err != nil {
		return nil, err
	}
	if compact(raw) {
		return raw[:len(raw):len(raw)], nil // an append copies
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, invalid("payload", "is not valid JSON")
	}
	return buf.Bytes(), nil
}

// compact reports whether raw, which Check read as JSON, is already
// compact: no space, tab or line break anywhere, not even within a string,
// so that json.Compact, which would copy it, would give it back the same.
func compact(raw []byte) bool {
	return bytes.IndexAny(raw, " \t\r\n") < 0
}

// Deps is what the worker shares with every executor.
type Deps struct {
	// Client is the outbound HTTP client (outbound.NewClient): the URLs are
	// the users'.
	Client *http.Client
	// Version is tock's version, sent as tock/<version>.
	Version string
	// Email is the SMTP relay of email jobs.
	Email EmailConfig
	// Brokers holds the connections to NATS servers and RabbitMQ brokers;
	// nil gives each registry its own, with the zero Options' policy.
	Brokers *Brokers
}

// Registry picks the executor for a task's type. It is itself an Executor,
// so the consumer loop needs to know only one.
type Registry struct {
	byType map[job.Type]Executor
}

// NewRegistry returns a registry with the executor of every job type.
func NewRegistry(d Deps) *Registry {
	if d.Brokers == nil {
		d.Brokers = NewBrokers(outbound.Options{})
	}
	r := &Registry{byType: make(map[job.Type]Executor, len(kinds))}
	for _, k := range kinds {
		r.byType[k.Type] = k.New(d)
	}
	return r
}

// Register sets the executor of a type, replacing any before it. It is for
// start-up and tests, and must not race with Execute.
func (r *Registry) Register(t job.Type, e Executor) {
	r.byType[t] = e
}

// Execute runs t with the executor of its type; a type without one is a
// failed outcome, not a panic, so the run records why.
func (r *Registry) Execute(ctx context.Context, t Task) Outcome {
	e, ok := r.byType[t.Type]
	if !ok {
		return failure("no executor for type %s", t.Type)
	}
	return e.Execute(ctx, t)
}
