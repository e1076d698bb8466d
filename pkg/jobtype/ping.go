package jobtype

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
)

// TypePing is a GET of a URL whose answer says whether a service is up.
const TypePing job.Type = "ping"

// Ping is the ping job type.
var Ping = Kind{
	Type:    TypePing,
	Summary: "GETs a URL and succeeds on the expected status (2xx by default)",
	Example: PingPayload{URL: "https://example.com/health"},
	Check:   checkPing,
	New:     func(d Deps) Executor { return NewPing(d.Client, d.Version) },
	Load:    func(target string, _ int) any { return PingPayload{URL: target} },
}

// PingPayload is the payload of a ping job: a GET whose answer in
// ExpectStatus (default 2xx) is success.
type PingPayload struct {
	URL          string `json:"url"`
	ExpectStatus string `json:"expect_status,omitempty"`
}

func checkPing(raw json.RawMessage, targets outbound.Options) error {
	var p PingPayload
	if err := decodeStrict(raw, &p); err != nil {
		return invalid("payload", "%s", err)
	}
	if err := CheckURL("payload.url", p.URL, targets); err != nil {
		return err
	}
	if _, err := job.ParseStatusSet(p.ExpectStatus); err != nil {
		return invalid("payload.expect_status", "%s", err)
	}
	return nil
}

// pingExecutor runs ping jobs: a GET of the URL that succeeds on a 2xx answer, for
// checking that a service is up or waking one on schedule.
type pingExecutor struct {
	client    *http.Client
	userAgent string
}

// NewPing returns a ping executor sending through client, which should be an
// outbound client (the URL is the user's), as tock/version.
func NewPing(client *http.Client, version string) Executor {
	return typed(TypePing, (&pingExecutor{client: client, userAgent: userAgent(version)}).run)
}

// run sends one GET with tock's headers (Idempotency-Key, X-Tock-Job-Id,
// X-Tock-Scheduled-For, X-Tock-Attempt, User-Agent) and no body.
func (p *pingExecutor) run(ctx context.Context, t Task, pl PingPayload) Outcome {
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
	return do(ctx, p.client, req, start, limit, want, t.KeepAnswer)
}
