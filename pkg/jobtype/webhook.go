package jobtype

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
)

// TypeWebhook is a call of a URL with a method, headers and a JSON body.
const TypeWebhook job.Type = "webhook"

// Webhook is the webhook job type.
var Webhook = Kind{
	Type:    TypeWebhook,
	Summary: "calls a URL (POST by default) with the payload's body and headers",
	Example: WebhookPayload{URL: "https://example.com/hook", Method: "POST", Body: json.RawMessage(`{"hello":"world"}`)},
	Check:   checkWebhook,
	New:     func(d Deps) Executor { return NewWebhook(d.Client, d.Version) },
	Load: func(target string, seq int) any {
		return WebhookPayload{URL: target, Body: json.RawMessage(`{"seq":` + strconv.Itoa(seq) + `}`)}
	},
	Secrets: secretsOf(func(p *WebhookPayload) (string, []*Spot) {
		return p.URL, HeaderSpots("headers", p.Headers)
	}, `"headers"`),
}

// WebhookPayload is the payload of a webhook job.
type WebhookPayload struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	// ExpectStatus is the set of answers that count as success (see
	// job.ParseStatusSet); default 2xx.
	ExpectStatus string `json:"expect_status,omitempty"`
	// ExpectBody, if set, must appear in the first 4 KiB of the answer.
	ExpectBody string `json:"expect_body,omitempty"`
}

func checkWebhook(raw json.RawMessage, targets outbound.Options) error {
	var p WebhookPayload
	if err := decodeStrict(raw, &p); err != nil {
		return invalid("payload", "%s", err)
	}
	if err := CheckURL("payload.url", p.URL, targets); err != nil {
		return err
	}
	if p.Method != "" {
		switch strings.ToUpper(p.Method) {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead:
		default:
			return invalid("payload.method", "must be one of GET, POST, PUT, PATCH, DELETE, HEAD")
		}
	}
	for k, v := range p.Headers {
		if !validHeader(k, v) {
			return invalid("payload.headers", "header %q is not a valid header", k)
		}
	}
	if _, err := job.ParseStatusSet(p.ExpectStatus); err != nil {
		return invalid("payload.expect_status", "%s", err)
	}
	if len(p.ExpectBody) > 1024 {
		return invalid("payload.expect_body", "is longer than 1024 bytes")
	}
	return nil
}

// webhookExecutor runs webhook jobs: it sends the payload's body to its URL and succeeds
// on a 2xx answer. The target sees the same Idempotency-Key on every attempt of
// an occurrence, so it can drop the duplicates a retry or redelivery causes.
type webhookExecutor struct {
	client    *http.Client
	userAgent string
}

// NewWebhook returns a webhook executor sending through client, which should be
// an outbound client (the URL is the user's), as tock/version.
func NewWebhook(client *http.Client, version string) Executor {
	return typed(TypeWebhook, (&webhookExecutor{client: client, userAgent: userAgent(version)}).run)
}

// run sends one attempt. The request carries the payload's headers, then
// tock's (Idempotency-Key, X-Tock-Job-Id, X-Tock-Scheduled-For, X-Tock-Attempt,
// User-Agent), which the payload cannot override. A body, if any, is sent as
// it is with Content-Type application/json unless the payload's headers say
// otherwise.
func (w *webhookExecutor) run(ctx context.Context, t Task, p WebhookPayload) Outcome {
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
	return do(ctx, w.client, req, start, limit, want, t.KeepAnswer)
}
