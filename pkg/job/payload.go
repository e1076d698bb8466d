package job

import "encoding/json"

// WebhookPayload is the payload of a webhook job.
type WebhookPayload struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// PingPayload is the payload of a ping job: a GET whose 2xx answer is success.
type PingPayload struct {
	URL string `json:"url"`
}
