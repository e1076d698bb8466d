package job

// Alerts and callbacks: a job's notify says which of its events are sent,
// and where. The worker sends alerts once the outcome is recorded, through
// the job types' own executors (and so the same outbound rules), once
// each. A callback is the durable form: it carries the target's answer and
// is written with the outcome, in the same transaction, then delivered at
// least once, with retries of its own.

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
	// NotifyCompleted: an attempt completed.
	NotifyCompleted NotifyEvent = "completed"
	// NotifySLOBreach: the job broke its SLO (an occurrence started later
	// than late_after, or none completed for silent_after); once per
	// breach.
	NotifySLOBreach NotifyEvent = "slo_breach"
	// NotifySLORecovered: a breach of the job's SLO ended.
	NotifySLORecovered NotifyEvent = "slo_recovered"
)

// NotifyEvents lists every event, in the order documented.
var NotifyEvents = []NotifyEvent{NotifyFailed, NotifyPermanentlyFailed, NotifyRecovered, NotifyPaused, NotifyCompleted,
	NotifySLOBreach, NotifySLORecovered}

// CallbackEvents are the events a callback can be sent on: those of an
// attempt's own outcome, which come with the target's answer, and those of
// the job's SLO, which the scheduler writes to the same outbox.
var CallbackEvents = []NotifyEvent{NotifyCompleted, NotifyFailed, NotifyPermanentlyFailed, NotifySLOBreach, NotifySLORecovered}

// Durable says alerts on e are written to the outbox and delivered at
// least once, whatever the destination: the SLO's, which the scheduler
// raises, and every event of a callback.
func (n *Notify) Durable(e NotifyEvent) bool {
	return n.Wants(e) && (n.Callback != nil || e == NotifySLOBreach || e == NotifySLORecovered)
}

// Notify is a job's alerting: the events, and exactly one destination.
type Notify struct {
	On       []NotifyEvent   `json:"on"`
	Webhook  *NotifyWebhook  `json:"webhook,omitempty"`
	Slack    *NotifySlack    `json:"slack,omitempty"`
	Email    *NotifyEmail    `json:"email,omitempty"`
	Callback *NotifyCallback `json:"callback,omitempty"`
}

// NotifyWebhook posts the alert as JSON to URL.
type NotifyWebhook struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// NotifyCallback posts the outcome and the target's answer as JSON to URL,
// at least once: it is written with the outcome and retried until the URL
// takes it (see CallbackEvents).
type NotifyCallback struct {
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

// CallbackOn reports whether a callback is sent on e.
func (n *Notify) CallbackOn(e NotifyEvent) bool {
	return n != nil && n.Callback != nil && n.Wants(e)
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
