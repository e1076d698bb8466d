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

// NewRegistry returns a registry with the webhook and ping executors, sending
// through client (an outbound client) as tock/version.
func NewRegistry(client *http.Client, version string) *Registry {
	r := &Registry{byType: make(map[job.Type]Executor)}
	r.Register(job.TypeWebhook, NewWebhook(client, version))
	r.Register(job.TypePing, NewPing(client, version))
	return r
}

// Register sets the executor of a type, replacing any before it. It is for
// start-up (slack and email join this way) and must not race with Execute.
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
