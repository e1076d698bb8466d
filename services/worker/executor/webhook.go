package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// Webhook runs webhook jobs: it sends the payload's body to its URL and succeeds
// on a 2xx answer. The target sees the same Idempotency-Key on every attempt of
// an occurrence, so it can drop the duplicates a retry or redelivery causes.
type Webhook struct {
	client    *http.Client
	userAgent string
}

// NewWebhook returns a webhook executor sending through client, which should be
// an outbound client (the URL is the user's), as tock/version.
func NewWebhook(client *http.Client, version string) *Webhook {
	return &Webhook{client: client, userAgent: userAgent(version)}
}

// Execute sends one attempt. The request carries the payload's headers, then
// tock's (Idempotency-Key, X-Tock-Job-Id, X-Tock-Scheduled-For, X-Tock-Attempt,
// User-Agent), which the payload cannot override. A body, if any, is sent as
// it is with Content-Type application/json unless the payload's headers say
// otherwise.
func (w *Webhook) Execute(ctx context.Context, t Task) Outcome {
	var p job.WebhookPayload
	if err := json.Unmarshal(t.Payload, &p); err != nil {
		return failure("invalid webhook payload: %v", err)
	}
	method := strings.ToUpper(p.Method)
	if method == "" {
		method = http.MethodPost
	}
	want, err := expectation(p.ExpectStatus, p.ExpectBody)
	if err != nil {
		return failure("invalid webhook payload: expect_status %v", err)
	}
	var body io.Reader
	hasBody := len(p.Body) > 0 && !bytes.Equal(bytes.TrimSpace(p.Body), []byte("null"))
	var raw []byte
	if hasBody {
		raw = p.Body
		body = bytes.NewReader(raw)
	}

	start := time.Now()
	ctx, cancel, limit := withTimeout(ctx, t, start)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.URL, body)
	if err != nil {
		return failure("invalid webhook request: %s", requestError(err))
	}
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range p.Headers {
		req.Header.Set(k, v)
	}
	setTockHeaders(req.Header, t, w.userAgent, raw)
	return do(ctx, w.client, req, start, limit, want)
}
