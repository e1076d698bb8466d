package executor

import (
	"context"
	"net/http"

	"github.com/tockhq/tock/pkg/job"
)

// Registry picks the executor for a task's type. It is itself an Executor, so
// the consumer loop needs to know only one.
type Registry struct {
	byType map[job.Type]Executor
}

// Option adds an executor to what NewRegistry registers.
type Option func(r *Registry, client *http.Client, version string)

// WithSlack registers the slack executor, posting through the registry's
// client.
func WithSlack() Option {
	return func(r *Registry, client *http.Client, version string) {
		r.Register(job.TypeSlack, NewSlack(client, version))
	}
}

// WithEmail registers the email executor, sending through the SMTP relay cfg
// describes. A cfg without Host still registers it, so that email jobs fail
// saying email is not configured rather than that the type is unknown.
func WithEmail(cfg EmailConfig) Option {
	return func(r *Registry, _ *http.Client, version string) {
		r.Register(job.TypeEmail, NewEmail(cfg, version))
	}
}

// NewRegistry returns a registry with the webhook and ping executors, and
// those opts add, sending through client (an outbound client) as
// tock/version.
func NewRegistry(client *http.Client, version string, opts ...Option) *Registry {
	r := &Registry{byType: make(map[job.Type]Executor)}
	r.Register(job.TypeWebhook, NewWebhook(client, version))
	r.Register(job.TypePing, NewPing(client, version))
	for _, o := range opts {
		o(r, client, version)
	}
	return r
}

// Register sets the executor of a type, replacing any before it. It is for
// start-up and must not race with Execute.
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
