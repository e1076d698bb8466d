package jobtype

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tockhq/tock/pkg/job"
)

// Alert is what a failure alert says: the event, the job and the run.
// Webhook alerts carry it as their JSON body.
type Alert struct {
	Event NotifyEventJSON `json:"event"`
	Job   AlertJob        `json:"job"`
	Run   AlertRun        `json:"run"`
	At    time.Time       `json:"at"`
}

// NotifyEventJSON is a job.NotifyEvent as it is sent.
type NotifyEventJSON = job.NotifyEvent

// AlertJob is the job an alert is about.
type AlertJob struct {
	ID     uuid.UUID         `json:"id"`
	Name   string            `json:"name"`
	Type   job.Type          `json:"type"`
	Labels map[string]string `json:"labels,omitempty"`
}

// AlertRun is the attempt an alert is about; empty for a pause.
type AlertRun struct {
	ScheduledFor time.Time     `json:"scheduled_for,omitzero"`
	Attempt      int           `json:"attempt,omitempty"`
	Status       job.RunStatus `json:"status,omitempty"`
	Error        string        `json:"error,omitempty"`
}

// AlertTask is the attempt that delivers alert a to n's destination: a
// webhook POST of the alert as JSON, a Slack message, or an email. Its
// payload is what a job of that type would carry, so it goes through that
// type's executor and outbound rules.
func AlertTask(n *job.Notify, a Alert) (job.Type, json.RawMessage, error) {
	summary := fmt.Sprintf("tock: job %q (%s) %s", a.Job.Name, a.Job.ID, eventText(a.Event))
	if a.Run.Error != "" {
		summary += ": " + a.Run.Error
	}
	var t job.Type
	var payload any
	switch {
	case n.Webhook != nil:
		body, err := json.Marshal(a)
		if err != nil {
			return "", nil, err
		}
		t, payload = Webhook.Type, WebhookPayload{URL: n.Webhook.URL, Method: http.MethodPost, Headers: n.Webhook.Headers, Body: body}
	case n.Slack != nil:
		t, payload = Slack.Type, SlackPayload{WebhookURL: n.Slack.WebhookURL, Text: truncate(summary, MaxSlackTextLen)}
	case n.Email != nil:
		t, payload = Email.Type, EmailPayload{To: n.Email.To, Subject: truncate(strings.Map(noLineBreak, summary), 200), Text: summary}
	default:
		return "", nil, fmt.Errorf("notify has no destination")
	}
	raw, err := json.Marshal(payload)
	return t, raw, err
}

func eventText(e job.NotifyEvent) string {
	switch e {
	case job.NotifyFailed:
		return "failed and will be retried"
	case job.NotifyPermanentlyFailed:
		return "failed permanently"
	case job.NotifyRecovered:
		return "recovered"
	case job.NotifyPaused:
		return "was paused after repeated failures"
	}
	return string(e)
}

func noLineBreak(r rune) rune {
	if isControl(r) {
		return ' '
	}
	return r
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
