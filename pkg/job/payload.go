package job

import "encoding/json"

// WebhookPayload is the payload of a webhook job.
type WebhookPayload struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	// ExpectStatus is the set of answers that count as success (see
	// ParseStatusSet); default 2xx.
	ExpectStatus string `json:"expect_status,omitempty"`
	// ExpectBody, if set, must appear in the first 4 KiB of the answer.
	ExpectBody string `json:"expect_body,omitempty"`
}

// PingPayload is the payload of a ping job: a GET whose answer in
// ExpectStatus (default 2xx) is success.
type PingPayload struct {
	URL          string `json:"url"`
	ExpectStatus string `json:"expect_status,omitempty"`
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

// EmailPayload is the payload of an email job, sent through the operator's
// SMTP relay from the operator's sender address. Addresses are RFC 5322
// addresses such as "ops@example.com" or "Ops <ops@example.com>".
type EmailPayload struct {
	To      []string `json:"to"`
	Cc      []string `json:"cc,omitempty"`
	Bcc     []string `json:"bcc,omitempty"`
	Subject string   `json:"subject"`
	// Text and HTML are the bodies; with both, the message is
	// multipart/alternative.
	Text    string `json:"text,omitempty"`
	HTML    string `json:"html,omitempty"`
	ReplyTo string `json:"reply_to,omitempty"`
}

// Limits of the Slack and email payloads, checked when a job is created.
const (
	// MaxSlackTextLen is Slack's limit on a message's text, in characters.
	MaxSlackTextLen = 40000
	// MaxSlackBlocks is Slack's limit on the blocks of one message.
	MaxSlackBlocks = 50
	// MaxEmailRecipients bounds to, cc and bcc together.
	MaxEmailRecipients = 50
	// MaxEmailSubjectLen is RFC 5322's line limit, in bytes.
	MaxEmailSubjectLen = 998
)
