package jobtype

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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
	// SLO is what an slo_breach or slo_recovered alert is about.
	SLO *AlertSLO `json:"slo,omitempty"`
}

// AlertSLO is the breach an SLO alert reports: which bound (late: an
// occurrence started, or is still not started, later than late_after;
// silent: none completed for silent_after), with the figures.
type AlertSLO struct {
	Kind        string `json:"kind"`
	LateAfter   string `json:"late_after,omitempty"`
	SilentAfter string `json:"silent_after,omitempty"`
	// LateByMs is how late the occurrence that broke late_after started,
	// or how long it has waited so far.
	LateByMs int64 `json:"late_by_ms,omitempty"`
	// Since is when the breach began; LastCompletedAt when the job last
	// completed an occurrence (silent; absent when it never did in the
	// window looked at).
	Since           time.Time `json:"since"`
	LastCompletedAt time.Time `json:"last_completed_at,omitzero"`
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
	ID           uuid.UUID     `json:"id,omitzero"`
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
	if a.SLO != nil {
		summary += ": " + sloText(a.SLO)
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
	case n.Callback != nil:
		body, err := json.Marshal(Callback{Alert: a})
		if err != nil {
			return "", nil, err
		}
		return CallbackTask(n, body)
	case n.Email != nil:
		t, payload = Email.Type, EmailPayload{To: n.Email.To, Subject: truncate(strings.Map(noLineBreak, summary), 200), Text: summary}
	default:
		return "", nil, fmt.Errorf("notify has no destination")
	}
	raw, err := json.Marshal(payload)
	return t, raw, err
}

// Callback is what a callback posts: the alert of the attempt's outcome,
// and what its target answered (none when no answer came: the connection
// failed, the attempt timed out).
type Callback struct {
	Alert
	Answer *CallbackAnswer `json:"answer,omitempty"`
}

// CallbackAnswer is an Answer as a callback carries it: the body as text
// when it is UTF-8, else in base64; the headers, each name once (values
// joined with ", "), at most maxAnswerHeaders of them and
// maxAnswerHeaderBytes in all.
type CallbackAnswer struct {
	Status     int               `json:"status"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       string            `json:"body,omitempty"`
	BodyBase64 string            `json:"body_base64,omitempty"`
	Truncated  bool              `json:"truncated,omitempty"`
}

// Bounds of the headers a callback carries.
const (
	maxAnswerHeaders     = 64
	maxAnswerHeaderBytes = 8 << 10
)

// NewCallbackAnswer is what a callback carries of ans; nil for nil.
func NewCallbackAnswer(ans *Answer) *CallbackAnswer {
	if ans == nil {
		return nil
	}
	out := &CallbackAnswer{Status: ans.Status, Truncated: ans.Truncated}
	body := ans.Body
	if ans.Truncated {
		// A text cut inside its last character stays text.
		for range utf8.UTFMax - 1 {
			if len(body) == 0 || utf8.Valid(body) {
				break
			}
			body = body[:len(body)-1]
		}
	}
	if utf8.Valid(body) {
		out.Body = string(body)
	} else {
		out.BodyBase64 = base64.StdEncoding.EncodeToString(ans.Body)
	}
	names := slices.Sorted(maps.Keys(ans.Headers))
	size := 0
	for _, k := range names {
		v := strings.Join(ans.Headers[k], ", ")
		if len(out.Headers) == maxAnswerHeaders || size+len(k)+len(v) > maxAnswerHeaderBytes {
			out.Truncated = true
			break
		}
		if out.Headers == nil {
			out.Headers = map[string]string{}
		}
		out.Headers[k] = v
		size += len(k) + len(v)
	}
	return out
}

// CallbackTask is the attempt that delivers a callback's body to n's
// callback URL: a webhook POST, signed like every delivery.
func CallbackTask(n *job.Notify, body []byte) (job.Type, json.RawMessage, error) {
	if n == nil || n.Callback == nil {
		return "", nil, fmt.Errorf("notify has no callback")
	}
	raw, err := json.Marshal(WebhookPayload{URL: n.Callback.URL, Method: http.MethodPost, Headers: n.Callback.Headers, Body: body})
	return Webhook.Type, raw, err
}

func eventText(e job.NotifyEvent) string {
	switch e {
	case job.NotifyCompleted:
		return "completed"
	case job.NotifySLOBreach:
		return "broke its SLO"
	case job.NotifySLORecovered:
		return "meets its SLO again"
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

// sloText says an SLO alert's figures in words.
func sloText(s *AlertSLO) string {
	if s.Kind == "silent" {
		return "no occurrence completed within " + s.SilentAfter
	}
	return fmt.Sprintf("an occurrence started %s late (late_after %s)", time.Duration(s.LateByMs)*time.Millisecond, s.LateAfter)
}
