package executor

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// Ping runs ping jobs: a GET of the URL that succeeds on a 2xx answer, for
// checking that a service is up or waking one on schedule.
type Ping struct {
	client    *http.Client
	userAgent string
}

// NewPing returns a ping executor sending through client, which should be an
// outbound client (the URL is the user's), as tock/version.
func NewPing(client *http.Client, version string) *Ping {
	return &Ping{client: client, userAgent: userAgent(version)}
}

// Execute sends one GET with tock's headers (Idempotency-Key, X-Tock-Job-Id,
// X-Tock-Scheduled-For, X-Tock-Attempt, User-Agent) and no body.
func (p *Ping) Execute(ctx context.Context, t Task) Outcome {
	var pl job.PingPayload
	if err := json.Unmarshal(t.Payload, &pl); err != nil {
		return failure("invalid ping payload: %v", err)
	}
	want, err := expectation(pl.ExpectStatus, "")
	if err != nil {
		return failure("invalid ping payload: expect_status %v", err)
	}
	start := time.Now()
	ctx, cancel, limit := withTimeout(ctx, t, start)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pl.URL, nil)
	if err != nil {
		return failure("invalid ping request: %s", requestError(err))
	}
	setTockHeaders(req.Header, t, p.userAgent, nil)
	return do(ctx, p.client, req, start, limit, want)
}
