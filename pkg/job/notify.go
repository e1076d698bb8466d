package job

// Failure alerts: a job's notify says which of its events are sent, and
// where. The worker sends them once the outcome is recorded, through the
// job types' own executors (and so the same outbound rules), once each.

// NotifyEvent is an event of a job that an alert can be sent on.
type NotifyEvent string

// Notify events.
const (
	// NotifyFailed: an attempt failed and another follows.
	NotifyFailed NotifyEvent = "failed"
	// NotifyPermanentlyFailed: an occurrence's last attempt failed.
	NotifyPermanentlyFailed NotifyEvent = "permanently_failed"
	// NotifyRecovered: an attempt completed after the job's previous one
	// failed.
	NotifyRecovered NotifyEvent = "recovered"
	// NotifyPaused: tock paused the job after repeated permanent failures.
	NotifyPaused NotifyEvent = "paused"
)

// NotifyEvents lists every event, in the order documented.
var NotifyEvents = []NotifyEvent{NotifyFailed, NotifyPermanentlyFailed, NotifyRecovered, NotifyPaused}

// Notify is a job's alerting: the events, and exactly one destination.
type Notify struct {
	On      []NotifyEvent  `json:"on"`
	Webhook *NotifyWebhook `json:"webhook,omitempty"`
	Slack   *NotifySlack   `json:"slack,omitempty"`
	Email   *NotifyEmail   `json:"email,omitempty"`
}

// NotifyWebhook posts the alert as JSON to URL.
type NotifyWebhook struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// NotifySlack posts the alert to a Slack incoming webhook.
type NotifySlack struct {
	WebhookURL string `json:"webhook_url"`
}

// NotifyEmail mails the alert through the worker's SMTP relay.
type NotifyEmail struct {
	To []string `json:"to"`
}

// Wants reports whether alerts are sent on e.
func (n *Notify) Wants(e NotifyEvent) bool {
	if n == nil {
		return false
	}
	for _, x := range n.On {
		if x == e {
			return true
		}
	}
	return false
}
