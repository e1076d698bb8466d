package jobtype

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
)

// TypeSlack is a message posted to a Slack incoming webhook.
const TypeSlack job.Type = "slack"

// Slack is the slack job type.
var Slack = Kind{
	Type:    TypeSlack,
	Summary: "posts a message to a Slack incoming webhook",
	Example: SlackPayload{WebhookURL: "https://hooks.slack.com/services/T000/B000/XXXX", Text: "Hello from tock"},
	Check:   checkSlack,
	New:     func(d Deps) Executor { return NewSlack(d.Client, d.Version) },
	Load: func(target string, seq int) any {
		return SlackPayload{WebhookURL: target, Text: "generate-load " + strconv.Itoa(seq)}
	},
	Secrets: secretsOf(func(p *SlackPayload) (string, []*Spot) {
		dest, spot := URLTokenSpot("webhook_url", &p.WebhookURL)
		return dest, spots(spot)
	}, ""),
}

// SlackPayload is the payload of a slack job: a message posted to a Slack
// incoming webhook. WebhookURL is a secret (whoever has it can post to the
// channel), so it never appears in a run's output or error.
type SlackPayload struct {
	WebhookURL string `json:"webhook_url"`
	Text       string `json:"text,omitempty"`
	// Blocks is a Block Kit array, sent as it is; Text is then the
	// notification's fallback.
	Blocks json.RawMessage `json:"blocks,omitempty"`
}

// Limits of a Slack message, checked when a job is created.
const (
	// MaxSlackTextLen is Slack's limit on a message's text, in characters.
	MaxSlackTextLen = 40000
	// MaxSlackBlocks is Slack's limit on the blocks of one message.
	MaxSlackBlocks = 50
)

// checkSlack validates a slack payload: a webhook URL, and text or blocks
// within Slack's limits, so that a job Slack would refuse is refused at once
// rather than failing at every run.
func checkSlack(raw json.RawMessage, targets outbound.Options) error {
	var p SlackPayload
	if err := decodeStrict(raw, &p); err != nil {
		return invalid("payload", "%s", err)
	}
	if err := CheckURL("payload.webhook_url", p.WebhookURL, targets); err != nil {
		return err
	}
	blocks := 0
	if b := bytes.TrimSpace(p.Blocks); len(b) > 0 && !bytes.Equal(b, []byte("null")) {
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil || slices.ContainsFunc(list, func(m map[string]json.RawMessage) bool { return m == nil }) {
			return invalid("payload.blocks", "must be an array of Block Kit objects")
		}
		if len(list) > MaxSlackBlocks {
			return invalid("payload.blocks", "has more than %d blocks", MaxSlackBlocks)
		}
		blocks = len(list)
	}
	switch {
	case strings.TrimSpace(p.Text) == "" && blocks == 0:
		return invalid("payload.text", "is required unless blocks are given")
	case utf8.RuneCountInString(p.Text) > MaxSlackTextLen:
		return invalid("payload.text", "is longer than %d characters", MaxSlackTextLen)
	}
	return nil
}

// slackExecutor runs slack jobs: it posts the payload's text and blocks to a Slack
// incoming webhook, which answers 200 "ok" on success. The webhook URL is a
// secret, so no output or error ever quotes it.
type slackExecutor struct {
	client    *http.Client
	userAgent string
}

// NewSlack returns a slack executor sending through client, which should be
// an outbound client (the webhook URL is the user's), as tock/version.
func NewSlack(client *http.Client, version string) Executor {
	return typed(TypeSlack, (&slackExecutor{client: client, userAgent: userAgent(version)}).run)
}

// slackMessage is the body Slack's incoming webhooks accept.
type slackMessage struct {
	Text   string          `json:"text,omitempty"`
	Blocks json.RawMessage `json:"blocks,omitempty"`
}

// run posts one attempt as JSON with tock's headers (Idempotency-Key,
// X-Tock-Job-Id, X-Tock-Scheduled-For, X-Tock-Attempt, User-Agent). Slack
// ignores them, but a proxy or a test double in front of it may not.
func (s *slackExecutor) run(ctx context.Context, t Task, p SlackPayload) Outcome {
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
	return do(ctx, s.client, req, start, limit, twoXX, false)
}
