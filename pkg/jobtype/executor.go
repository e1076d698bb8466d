package jobtype

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/strictjson"
)

// Task is one attempt handed to an jobtype.
type Task struct {
	JobID        uuid.UUID
	Owner        uuid.UUID
	Name         string
	Type         job.Type
	ScheduledFor time.Time
	// Nominal is the occurrence's time before its job's jitter moved it to
	// ScheduledFor (sent as X-Tock-Nominal-Time); zero for a job without
	// jitter, and for a triggered run, which is due when it is triggered.
	Nominal time.Time
	Attempt int
	// Backfill says a backfill queued the occurrence, past due, at its
	// owner's request (sent as X-Tock-Backfill: true).
	Backfill bool
	// Key is the occurrence's idempotency key, the same on every attempt.
	Key     string
	Payload json.RawMessage
	Timeout time.Duration
	// SigningSecret is the owner's secret; webhook and ping requests carry
	// X-Tock-Signature made with it (see Sign).
	SigningSecret string
	// PreviousSigningSecret, during the grace period of a rotation, signs
	// too: the header carries v1=<current>,v1=<previous>.
	PreviousSigningSecret string
	// TraceParent and TraceState are the W3C trace context of the attempt's
	// span, sent with tock's other headers (traceparent, tracestate) so the
	// target's own trace continues it; empty when the worker does not
	// trace, and then no header is sent.
	TraceParent, TraceState string
	// KeepAnswer asks for the target's answer in Outcome.Answer (webhook
	// and ping): the job sends a callback that carries it.
	KeepAnswer bool
}

// Outcome is what one attempt did. Output and Error are bounded (OutputLimit).
type Outcome struct {
	OK         bool
	StatusCode int
	Latency    time.Duration
	Output     string
	Error      string
	// Answer is what the target answered, when the task asked to keep it
	// and an answer came; nil otherwise.
	Answer *Answer
}

// Answer is a target's answer as a callback carries it: the status, the
// headers and the first AnswerLimit bytes of the body.
type Answer struct {
	Status    int
	Headers   http.Header
	Body      []byte
	Truncated bool
}

// AnswerLimit bounds the body an Answer keeps.
const AnswerLimit = 64 << 10

// OutputLimit bounds the response body or error text kept on a run.
const OutputLimit = 4 << 10

// Executor runs tasks of one type. Execute must return by ctx's deadline, which
// the caller sets from the task's timeout.
type Executor interface {
	Execute(ctx context.Context, t Task) Outcome
}

// typed makes an Executor of a type's run, which starts from the decoded
// payload P (River's Worker[T]): the task's payload is decoded here, once
// for every type, and one that does not decode fails the attempt.
func typed[P any](typ job.Type, run func(ctx context.Context, t Task, p P) Outcome) Executor {
	return executorFunc(func(ctx context.Context, t Task) Outcome {
		var p P
		if err := strictjson.UnmarshalFlat(t.Payload, &p); err != nil {
			return failure("invalid %s payload: %v", typ, err)
		}
		return run(ctx, t, p)
	})
}

// executorFunc is a function as an Executor.
type executorFunc func(ctx context.Context, t Task) Outcome

func (f executorFunc) Execute(ctx context.Context, t Task) Outcome { return f(ctx, t) }
