package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// Slack runs slack jobs: it posts the payload's text and blocks to a Slack
// incoming webhook, which answers 200 "ok" on success. The webhook URL is a
// secret, so no output or error ever quotes it.
type Slack struct {
	client    *http.Client
	userAgent string
}

// NewSlack returns a slack executor sending through client, which should be
// an outbound client (the webhook URL is the user's), as tock/version.
func NewSlack(client *http.Client, version string) *Slack {
	return &Slack{client: client, userAgent: userAgent(version)}
}

// slackMessage is the body Slack's incoming webhooks accept.
type slackMessage struct {
	Text   string          `json:"text,omitempty"`
	Blocks json.RawMessage `json:"blocks,omitempty"`
}

// Execute posts one attempt as JSON with tock's headers (Idempotency-Key,
// X-Tock-Job-Id, X-Tock-Scheduled-For, X-Tock-Attempt, User-Agent). Slack
// ignores them, but a proxy or a test double in front of it may not.
func (s *Slack) Execute(ctx context.Context, t Task) Outcome {
	var p job.SlackPayload
	if err := json.Unmarshal(t.Payload, &p); err != nil {
		return failure("invalid slack payload: %v", err)
	}
	msg := slackMessage{Text: p.Text}
	if b := bytes.TrimSpace(p.Blocks); len(b) > 0 && !bytes.Equal(b, []byte("null")) {
		msg.Blocks = b
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return failure("invalid slack payload: blocks are not valid JSON")
	}

	start := time.Now()
	ctx, cancel, limit := withTimeout(ctx, t, start)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.WebhookURL, bytes.NewReader(body))
	if err != nil {
		// The parse error would quote part of the URL.
		return failure("invalid slack webhook_url")
	}
	req.Header.Set("Content-Type", "application/json")
	setTockHeaders(req.Header, t, s.userAgent, body)
	return do(ctx, s.client, req, start, limit, twoXX)
}
