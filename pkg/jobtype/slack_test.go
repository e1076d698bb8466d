package jobtype_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
)

// slackPath is the secret part of a Slack webhook URL.
const slackPath = "/services/T0SECRET/B0SECRET/xoxsecrettoken"

// slack returns a registry with the slack executor, sending through b's client.
func slack(b *bundle) *jobtype.Registry {
	return jobtype.NewRegistry(jobtype.Deps{Client: b.client, Version: version})
}

// requireNoURL asserts that no part of an outcome quotes the webhook URL.
func requireNoURL(t *testing.T, out jobtype.Outcome) {
	t.Helper()
	for _, s := range []string{out.Error, out.Output} {
		require.NotContains(t, s, "SECRET")
		require.NotContains(t, s, "xoxsecrettoken")
		require.NotContains(t, s, "/services/")
	}
}

func TestSlack(t *testing.T) {
	t.Parallel()

	t.Run("PostsTextAsJSONWithTockHeaders", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypeSlack, jobtype.SlackPayload{WebhookURL: b.srv.URL + slackPath, Text: "deploy done :tada:"})
		out := execute(t, slack(b), tk)
		require.True(t, out.OK, out.Error)
		require.Equal(t, http.StatusOK, out.StatusCode)
		require.Equal(t, "ok", out.Output)
		require.Positive(t, out.Latency)

		got := b.received()
		require.Len(t, got, 1)
		require.Equal(t, http.MethodPost, got[0].Method)
		require.Equal(t, slackPath, got[0].Path)
		require.JSONEq(t, `{"text":"deploy done :tada:"}`, string(got[0].Body))
		h := got[0].Header
		require.Equal(t, "application/json", h.Get("Content-Type"))
		require.Equal(t, tk.Key, h.Get("Idempotency-Key"))
		require.Equal(t, jobID.String(), h.Get("X-Tock-Job-Id"))
		require.Equal(t, "2026-11-22T09:00:00.000Z", h.Get("X-Tock-Scheduled-For"))
		require.Equal(t, "2", h.Get("X-Tock-Attempt"))
		require.Equal(t, "tock/"+version, h.Get("User-Agent"))
	})

	t.Run("PassesBlocksThrough", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		blocks := `[{"type":"section","text":{"type":"mrkdwn","text":"*Nightly* report"}},{"type":"divider"}]`
		out := execute(t, slack(b), task(t, jobtype.TypeSlack, jobtype.SlackPayload{
			WebhookURL: b.srv.URL + slackPath, Text: "Nightly report", Blocks: json.RawMessage(blocks),
		}))
		require.True(t, out.OK, out.Error)
		require.JSONEq(t, `{"text":"Nightly report","blocks":`+blocks+`}`, string(b.received()[0].Body))
	})

	t.Run("SendsBlocksWithoutText", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		out := execute(t, slack(b), task(t, jobtype.TypeSlack, jobtype.SlackPayload{
			WebhookURL: b.srv.URL + slackPath, Blocks: json.RawMessage(`[{"type":"divider"}]`),
		}))
		require.True(t, out.OK, out.Error)
		require.JSONEq(t, `{"blocks":[{"type":"divider"}]}`, string(b.received()[0].Body))
	})

	t.Run("FailsOnClientError", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "no_service")
		})
		out := execute(t, slack(b), task(t, jobtype.TypeSlack, jobtype.SlackPayload{WebhookURL: b.srv.URL + slackPath, Text: "hi"}))
		require.False(t, out.OK)
		require.Equal(t, http.StatusNotFound, out.StatusCode)
		require.Equal(t, "status 404: no_service", out.Error)
		requireNoURL(t, out)
	})

	t.Run("FailsOnServerError", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "rollup_error")
		})
		out := execute(t, slack(b), task(t, jobtype.TypeSlack, jobtype.SlackPayload{WebhookURL: b.srv.URL + slackPath, Text: "hi"}))
		require.False(t, out.OK)
		require.Equal(t, http.StatusInternalServerError, out.StatusCode)
		require.Equal(t, "status 500: rollup_error", out.Error)
	})

	t.Run("TimesOutWithinDeadline", func(t *testing.T) {
		t.Parallel()
		b := setup(t, hang(t))
		tk := task(t, jobtype.TypeSlack, jobtype.SlackPayload{WebhookURL: b.srv.URL + slackPath, Text: "hi"})
		tk.Timeout = 200 * time.Millisecond
		start := time.Now()
		out := execute(t, slack(b), tk)
		require.Less(t, time.Since(start), 5*time.Second, "a bound on hanging, not a performance assertion")
		require.False(t, out.OK)
		require.Equal(t, "timeout after 200ms", out.Error)
		requireNoURL(t, out)
	})

	t.Run("ErrorsNeverQuoteTheWebhookURL", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		denied := outbound.NewClient(outbound.Options{})
		t.Cleanup(denied.CloseIdleConnections)
		refused := strings.TrimSuffix(refusedURL(t), "/")
		tests := []struct {
			name string
			reg  *jobtype.Registry
			url  string
			want string
		}{
			{"ConnectionRefused", slack(b), refused + slackPath, "connection refused"},
			{"DeniedTarget", jobtype.NewRegistry(jobtype.Deps{Client: denied, Version: version}), b.srv.URL + slackPath, "target address not allowed"},
			{"Unparsable", slack(b), "http://hooks.example.com:xoxsecrettoken" + slackPath, "invalid slack webhook_url"},
			{"NotHTTP", slack(b), "ftp://hooks.example.com" + slackPath, "unsupported protocol scheme"},
		}
		for _, tt := range tests {
			out := execute(t, tt.reg, task(t, jobtype.TypeSlack, jobtype.SlackPayload{WebhookURL: tt.url, Text: "hi"}))
			require.False(t, out.OK, tt.name)
			require.Contains(t, out.Error, tt.want, tt.name)
			require.NotContains(t, out.Error, tt.url, tt.name)
			requireNoURL(t, out)
		}
		require.Empty(t, b.received(), "the denied target was never reached")
	})

	t.Run("FailsOnInvalidPayload", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypeSlack, nil)
		tk.Payload = json.RawMessage(`{"webhook_url": 5}`)
		out := execute(t, slack(b), tk)
		require.False(t, out.OK)
		require.Contains(t, out.Error, "invalid slack payload")
		require.Empty(t, b.received())
	})
}
