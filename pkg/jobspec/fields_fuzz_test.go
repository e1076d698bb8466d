package jobspec_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
)

// requireFieldError fails unless err is a *job.FieldError naming a field
// under prefix.
func requireFieldError(t *testing.T, err error, prefix string) {
	t.Helper()
	var fe *job.FieldError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, prefix) {
		t.Fatalf("error %v (%T) is not a *FieldError on %s", err, err, prefix)
	}
}

// FuzzLabels: any labels either pass, and then hold only what Postgres and
// the label index accept, or are refused on the labels field.
func FuzzLabels(f *testing.F) {
	for _, seed := range []string{`{"customer":"1234"}`, `{"Bad":"x"}`, `{"a":"b\u0000"}`, `{"a.b-c_d":""}`, `{}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]string
		if json.Unmarshal(data, &m) != nil {
			return
		}
		got, err := jobspec.ValidLabels(m)
		if err != nil {
			requireFieldError(t, err, "labels")
			return
		}
		if len(got) > job.MaxLabels {
			t.Fatalf("%d labels accepted", len(got))
		}
		for k, v := range got {
			if !job.ValidLabelKey(k) || utf8.RuneCountInString(v) > job.MaxLabelValue || !utf8.ValidString(v) ||
				strings.ContainsFunc(v, unicode.IsControl) {
				t.Fatalf("label %q=%q accepted", k, v)
			}
		}
	})
}

// FuzzNotify: any notify either passes, with known events, each once, and
// one destination, or is refused on a notify field.
func FuzzNotify(f *testing.F) {
	for _, seed := range []string{
		`{"on":["permanently_failed"],"webhook":{"url":"https://example.com/alerts","headers":{"X-Key":"k"}}}`,
		`{"on":["failed","failed","recovered"],"slack":{"webhook_url":"https://hooks.slack.com/services/T/B/X"}}`,
		`{"on":["paused"],"email":{"to":["ops@example.com"]}}`,
		`{"on":["paused"],"webhook":{"url":"http://127.0.0.1/"}}`,
		`{"on":["nope"],"email":{"to":["a@b"]},"slack":{"webhook_url":"x"}}`,
		`{"on":[]}`,
		`{"on":["completed"],"callback":{"url":"https://example.com/cb","headers":{"Authorization":"Bearer x"}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var n job.Notify
		if json.Unmarshal(data, &n) != nil {
			return
		}
		got, err := jobspec.ValidNotify(&n, jobspec.DefaultLimits)
		if err != nil {
			requireFieldError(t, err, "notify")
			return
		}
		if got == nil {
			if len(n.On) != 0 {
				t.Fatalf("events %v accepted as no alerting", n.On)
			}
			return
		}
		seen := map[job.NotifyEvent]bool{}
		for _, e := range got.On {
			if seen[e] || !(&job.Notify{On: job.NotifyEvents}).Wants(e) {
				t.Fatalf("event %q accepted twice or unknown", e)
			}
			seen[e] = true
		}
		dests := 0
		for _, set := range []bool{got.Webhook != nil, got.Slack != nil, got.Email != nil, got.Callback != nil} {
			if set {
				dests++
			}
		}
		if dests != 1 {
			t.Fatalf("%d destinations accepted", dests)
		}
		for _, e := range got.On {
			if got.Callback != nil && e != job.NotifyCompleted && e != job.NotifyFailed && e != job.NotifyPermanentlyFailed {
				t.Fatalf("a callback accepted on %q", e)
			}
		}
	})
}

func TestNotifyValidation(t *testing.T) {
	for body, field := range map[string]string{
		`{"on":["exploded"],"email":{"to":["a@example.com"]}}`: "notify.on",
		`{"on":["failed"]}`: "notify",
		`{"on":["failed"],"email":{"to":["a@example.com"]},"slack":{"webhook_url":"https://x.test/"}}`:               "notify",
		`{"on":["failed"],"webhook":{"url":"http://127.0.0.1:9/"}}`:                                                  "notify.webhook.url",
		`{"on":["failed"],"webhook":{"url":"ftp://example.com/"}}`:                                                   "notify.webhook.url",
		`{"on":["failed"],"slack":{"webhook_url":"http://169.254.169.254/"}}`:                                        "notify.slack",
		`{"on":["failed"],"email":{"to":["not an address"]}}`:                                                        "notify.email",
		`{"on":["recovered"],"callback":{"url":"https://example.com/cb"}}`:                                           "notify.on",
		`{"on":["completed"],"callback":{"url":"http://10.0.0.1/cb"}}`:                                               "notify.callback.url",
		`{"on":["completed"],"callback":{"url":"https://example.com/cb"},"webhook":{"url":"https://example.com/a"}}`: "notify",
	} {
		var n job.Notify
		if err := json.Unmarshal([]byte(body), &n); err != nil {
			t.Fatal(err)
		}
		_, err := jobspec.ValidNotify(&n, jobspec.DefaultLimits)
		if err == nil {
			t.Fatalf("%s accepted", body)
		}
		requireFieldError(t, err, field)
	}
	n, err := jobspec.ValidNotify(&job.Notify{On: []job.NotifyEvent{"failed", "failed"}, Webhook: &job.NotifyWebhook{URL: "https://example.com/a"}}, jobspec.DefaultLimits)
	if err != nil || len(n.On) != 1 {
		t.Fatalf("got %+v, %v", n, err)
	}
	n, err = jobspec.ValidNotify(&job.Notify{On: []job.NotifyEvent{"completed", "permanently_failed"}, Callback: &job.NotifyCallback{URL: "https://example.com/cb"}}, jobspec.DefaultLimits)
	if err != nil || !n.CallbackOn(job.NotifyCompleted) || n.CallbackOn(job.NotifyFailed) {
		t.Fatalf("got %+v, %v", n, err)
	}
}

// FuzzFlow: any flow either passes, and then names a key of 1 to 200
// showable characters without spaces or '/', with limits in their bounds
// whose rate reads back as itself, or is refused on a flow field.
func FuzzFlow(f *testing.F) {
	for _, seed := range []string{`{"key":"customer-42","concurrency":3,"rate":"50/1s"}`, `{"key":"sms","rate":"10/s"}`,
		`{}`, `null`, `{"key":""}`, `{"key":"a b"}`, `{"key":"k","rate":"0/1s"}`, `{"key":"k","concurrency":-1}`,
		`{"key":"k","rate":"5/25h"}`, `{"key":"k","concurrency":0}`, `{"key":"k","colour":1}`, `{"key":"a/b"}`, `{"key":"\u202e"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := jobspec.ParseFlow(data)
		if err != nil {
			requireFieldError(t, err, "flow")
			return
		}
		if got == nil {
			return
		}
		k := got.Key
		if k == "" || utf8.RuneCountInString(k) > job.MaxFlowKeyLen || !utf8.ValidString(k) || !jobspec.Showable(k) ||
			strings.ContainsFunc(k, func(r rune) bool { return unicode.IsSpace(r) || r == '/' }) {
			t.Fatalf("key %q accepted", k)
		}
		if got.Concurrency < 0 || got.Concurrency > job.MaxFlowConcurrency {
			t.Fatalf("concurrency %d accepted", got.Concurrency)
		}
		if r := got.Rate; r != nil {
			if r.Count < 1 || r.Count > job.MaxRateCount || r.Period < job.MinRatePeriod || r.Period > job.MaxRatePeriod {
				t.Fatalf("rate %+v accepted", *r)
			}
			back, err := job.ParseRate(r.String())
			if err != nil || back != *r {
				t.Fatalf("rate %+v reads back as %+v, %v", *r, back, err)
			}
		}
	})
}

func TestFlowValidation(t *testing.T) {
	for body, field := range map[string]string{
		`{"key":"k","concurrency":0}`: "flow.concurrency", `{"key":"k","concurrency":100001}`: "flow.concurrency",
		`{"key":"k","rate":"0/1s"}`: "flow.rate", `{"key":"k","rate":"5/1ms"}`: "flow.rate", `{"concurrency":3}`: "flow.key",
		`{"key":"a b"}`: "flow.key", `{"key":"a/b"}`: "flow.key", `{"key":"k","colour":1}`: "flow",
	} {
		_, err := jobspec.ParseFlow([]byte(body))
		if err == nil {
			t.Fatalf("%s accepted", body)
		}
		requireFieldError(t, err, field)
	}
	f, err := jobspec.ParseFlow([]byte(`{"key":"customer-42","concurrency":3,"rate":"50/1s"}`))
	if err != nil || f.Key != "customer-42" || f.Concurrency != 3 || f.Rate.String() != "50/1s" {
		t.Fatalf("got %+v, %v", f, err)
	}
}

func FuzzDebounce(f *testing.F) {
	for _, seed := range []string{`{"key":"order-7","window":"3s"}`, `{"key":"k","window":"10ms"}`, `{"key":"k","window":"24h"}`,
		`{}`, `null`, `{"key":""}`, `{"key":"a b","window":"1s"}`, `{"key":"k"}`, `{"key":"k","window":"1ns"}`,
		`{"key":"k","window":"25h"}`, `{"key":"k","window":"-1s"}`, `{"key":"k","window":3}`, `{"window":"1s"}`, `{"key":"k","window":"1s","x":1}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := jobspec.ParseDebounce(data)
		if err != nil {
			requireFieldError(t, err, "debounce")
			return
		}
		if got == nil {
			return
		}
		k := got.Key
		if k == "" || utf8.RuneCountInString(k) > job.MaxDebounceKeyLen || !utf8.ValidString(k) || !jobspec.Showable(k) ||
			strings.ContainsFunc(k, func(r rune) bool { return unicode.IsSpace(r) || r == '/' }) {
			t.Fatalf("key %q accepted", k)
		}
		if got.Window < job.MinDebounceWindow || got.Window > job.MaxDebounceWindow {
			t.Fatalf("window %s accepted", got.Window)
		}
		// What the jobs.debounce column keeps reads back the same.
		raw, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var back job.Debounce
		if err := json.Unmarshal(raw, &back); err != nil || back != *got {
			t.Fatalf("%s reads back as %+v, %v", raw, back, err)
		}
	})
}

func TestDebounceValidation(t *testing.T) {
	for body, field := range map[string]string{
		`{"key":"k"}`: "debounce.window", `{"key":"k","window":"5ms"}`: "debounce.window", `{"key":"k","window":"25h"}`: "debounce.window",
		`{"key":"k","window":"soon"}`: "debounce.window", `{"window":"1s"}`: "debounce.key", `{"key":"a/b","window":"1s"}`: "debounce.key",
		`{"key":"k","window":"1s","colour":1}`: "debounce", `"k"`: "debounce",
	} {
		_, err := jobspec.ParseDebounce([]byte(body))
		if err == nil {
			t.Fatalf("%s accepted", body)
		}
		requireFieldError(t, err, field)
	}
}
