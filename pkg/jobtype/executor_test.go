package jobtype_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/testenv"
)

// goleak runs once after all tests: VerifyNone inside parallel tests would see
// the goroutines of the tests running beside them. Each test closes its server
// and its client's idle connections, so nothing should remain.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const version = "1.2.3"

// received is one request as the target saw it.
type received struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// bundle is what setup returns: a loopback target, the requests it received,
// and a registry whose client may dial loopback.
type bundle struct {
	srv      *httptest.Server
	client   *http.Client
	registry *jobtype.Registry

	mu       sync.Mutex
	requests []received
}

func (b *bundle) received() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.requests...)
}

// setup starts a target on 127.0.0.1 answering with h after recording the
// request (200 "ok" if h is nil).
func setup(t *testing.T, h http.HandlerFunc) *bundle {
	t.Helper()
	if h == nil {
		h = func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
	}
	b := &bundle{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.requests = append(b.requests, received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		b.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(b.srv.Close)
	b.client = outbound.NewClient(outbound.Options{AllowPrivate: true})
	t.Cleanup(b.client.CloseIdleConnections)
	b.registry = jobtype.NewRegistry(jobtype.Deps{Client: b.client, Version: version})
	return b
}

var (
	jobID        = uuid.MustParse("0199a3b4-0000-7000-8000-000000000001")
	scheduledFor = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
)

// task returns an attempt of a job of type typ with payload p.
func task(t *testing.T, typ job.Type, p any) jobtype.Task {
	t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	occ := job.Occurrence{JobID: jobID, ScheduledFor: scheduledFor, Attempt: 2}
	return jobtype.Task{
		JobID:        jobID,
		Owner:        uuid.MustParse("0199a3b4-0000-7000-8000-0000000000aa"),
		Name:         "nightly",
		Type:         typ,
		ScheduledFor: scheduledFor,
		Attempt:      occ.Attempt,
		Key:          occ.Key(),
		Payload:      raw,
		Timeout:      5 * time.Second,
	}
}

// The trace context of a traced attempt.
const (
	traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traceState  = "vendor=opaque"
)

// traced is tk as a worker with tracing on hands it over.
func traced(tk jobtype.Task) jobtype.Task {
	tk.TraceParent, tk.TraceState = traceParent, traceState
	return tk
}

// execute runs tk the way the worker does: with a deadline of its timeout.
func execute(t *testing.T, e jobtype.Executor, tk jobtype.Task) jobtype.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), tk.Timeout)
	defer cancel()
	return e.Execute(ctx, tk)
}

// hang answers only when the client goes away or the test ends, so
// httptest.Server.Close never waits on it.
func hang(t *testing.T) http.HandlerFunc {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

// refusedURL is a loopback URL nobody listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "http://" + addr + "/"
}

func TestWebhook(t *testing.T) {
	t.Parallel()

	t.Run("RecordsSuccess", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"accepted":true}`)
		})
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL + "/hook"}))
		require.True(t, out.OK, out.Error)
		require.Equal(t, http.StatusCreated, out.StatusCode)
		require.Equal(t, `{"accepted":true}`, out.Output)
		require.Empty(t, out.Error)
		require.Positive(t, out.Latency)
	})

	t.Run("KeepsTheAnswerForACallback", func(t *testing.T) {
		t.Parallel()
		big := strings.Repeat("€", jobtype.AnswerLimit) // 3 bytes each: the limit cuts one
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Answer", "yes")
			if r.URL.Path == "/big" {
				_, _ = io.WriteString(w, big)
				return
			}
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, "queued 42")
		})
		tk := task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL + "/small"})
		require.Nil(t, execute(t, b.registry, tk).Answer, "kept only when asked")
		tk.KeepAnswer = true
		out := execute(t, b.registry, tk)
		require.True(t, out.OK, out.Error)
		require.NotNil(t, out.Answer)
		require.Equal(t, http.StatusAccepted, out.Answer.Status)
		require.Equal(t, "queued 42", string(out.Answer.Body))
		require.Equal(t, "yes", out.Answer.Headers.Get("X-Answer"))
		require.False(t, out.Answer.Truncated)

		tk = task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL + "/big"})
		tk.KeepAnswer = true
		out = execute(t, b.registry, tk)
		require.True(t, out.OK, out.Error)
		require.Len(t, out.Answer.Body, jobtype.AnswerLimit)
		require.True(t, out.Answer.Truncated)
		require.LessOrEqual(t, len(out.Output), jobtype.OutputLimit, "the run keeps its own bound")
		ans := jobtype.NewCallbackAnswer(out.Answer)
		require.True(t, ans.Truncated)
		require.Empty(t, ans.BodyBase64, "a text cut inside its last character stays text")
		require.Equal(t, jobtype.AnswerLimit/3*3, len(ans.Body))
		require.Equal(t, "yes", ans.Headers["X-Answer"])

		bin := jobtype.NewCallbackAnswer(&jobtype.Answer{Status: 200, Body: []byte{0xff, 0xfe, 0x00}})
		require.Empty(t, bin.Body)
		require.Equal(t, "//4A", bin.BodyBase64, "a body that is not text is sent in base64")
	})

	t.Run("SendsTockHeaders", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL})
		out := execute(t, b.registry, tk)
		require.True(t, out.OK, out.Error)
		got := b.received()
		require.Len(t, got, 1)
		h := got[0].Header
		require.Equal(t, jobID.String()+":1795338000000", h.Get("Idempotency-Key"))
		require.Equal(t, tk.Key, h.Get("Idempotency-Key"))
		require.Equal(t, jobID.String(), h.Get("X-Tock-Job-Id"))
		require.Equal(t, "2026-11-22T09:00:00.000Z", h.Get("X-Tock-Scheduled-For"))
		require.Equal(t, "2", h.Get("X-Tock-Attempt"))
		require.Equal(t, "tock/"+version, h.Get("User-Agent"))
		require.Empty(t, h.Values("traceparent"), "an untraced attempt sends no trace context")
		require.Empty(t, h.Values("tracestate"))
	})

	t.Run("SendsTheAttemptsTraceContext", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := traced(task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL,
			Headers: map[string]string{"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}}))
		out := execute(t, b.registry, tk)
		require.True(t, out.OK, out.Error)
		h := b.received()[0].Header
		require.Equal(t, []string{traceParent}, h.Values("traceparent"), "the attempt's context, not the payload's")
		require.Equal(t, traceState, h.Get("tracestate"))
	})

	t.Run("ScheduledForIsUTCWithMilliseconds", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL})
		paris, err := time.LoadLocation("Europe/Paris")
		require.NoError(t, err)
		tk.ScheduledFor = time.Date(2026, 11, 22, 10, 0, 0, 7_000_000, paris)
		require.True(t, execute(t, b.registry, tk).OK)
		require.Equal(t, "2026-11-22T09:00:00.007Z", b.received()[0].Header.Get("X-Tock-Scheduled-For"))
	})

	t.Run("SendsJSONBodyWithMethod", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		body := json.RawMessage(`{"order":42,"items":["a","b"]}`)
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL + "/orders", Method: "put", Body: body}))
		require.True(t, out.OK, out.Error)
		got := b.received()
		require.Len(t, got, 1)
		require.Equal(t, http.MethodPut, got[0].Method)
		require.Equal(t, "/orders", got[0].Path)
		require.JSONEq(t, string(body), string(got[0].Body))
		require.Equal(t, "application/json", got[0].Header.Get("Content-Type"))
	})

	t.Run("DefaultsToPost", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		require.True(t, execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL})).OK)
		got := b.received()
		require.Equal(t, http.MethodPost, got[0].Method)
		require.Empty(t, got[0].Body)
		require.Empty(t, got[0].Header.Get("Content-Type"), "no body, no content type")
	})

	t.Run("PassesCustomHeaders", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{
			URL:     b.srv.URL,
			Body:    json.RawMessage(`{}`),
			Headers: map[string]string{"Authorization": "Bearer s3cret", "X-Custom": "yes", "Content-Type": "application/cloudevents+json"},
		}))
		require.True(t, out.OK, out.Error)
		h := b.received()[0].Header
		require.Equal(t, "Bearer s3cret", h.Get("Authorization"))
		require.Equal(t, "yes", h.Get("X-Custom"))
		require.Equal(t, "application/cloudevents+json", h.Get("Content-Type"))
	})

	t.Run("CustomHeadersCannotOverrideTockHeaders", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL, Headers: map[string]string{
			"idempotency-key":      "mine",
			"X-Tock-Job-Id":        "forged",
			"X-Tock-Scheduled-For": "yesterday",
			"X-Tock-Attempt":       "99",
			"User-Agent":           "curl/8",
		}})
		require.True(t, execute(t, b.registry, tk).OK)
		h := b.received()[0].Header
		require.Equal(t, []string{tk.Key}, h.Values("Idempotency-Key"))
		require.Equal(t, []string{jobID.String()}, h.Values("X-Tock-Job-Id"))
		require.Equal(t, []string{"2026-11-22T09:00:00.000Z"}, h.Values("X-Tock-Scheduled-For"))
		require.Equal(t, []string{"2"}, h.Values("X-Tock-Attempt"))
		require.Equal(t, []string{"tock/" + version}, h.Values("User-Agent"))
	})

	t.Run("FailsOnServerError", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "database is down")
		})
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL}))
		require.False(t, out.OK)
		require.Equal(t, http.StatusInternalServerError, out.StatusCode)
		require.Equal(t, "status 500: database is down", out.Error)
		require.Equal(t, "database is down", out.Output)
	})

	t.Run("FailsOnTooManyRedirects", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
		})
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL + "/"}))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "too many redirects")
		require.Len(t, b.received(), 1+outbound.DefaultMaxRedirects)
	})

	t.Run("TimesOutWithinDeadline", func(t *testing.T) {
		t.Parallel()
		b := setup(t, hang(t))
		tk := task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL})
		tk.Timeout = 200 * time.Millisecond
		start := time.Now()
		out := execute(t, b.registry, tk)
		// A bound on hanging, not a performance assertion: Execute must return
		// once its deadline passes, not when the server gives up.
		require.Less(t, time.Since(start), 5*time.Second)
		require.False(t, out.OK)
		require.Equal(t, "timeout after 200ms", out.Error)
		require.Zero(t, out.StatusCode)
	})

	t.Run("BodyCutAtTheTimeoutIsATimeout", func(t *testing.T) {
		t.Parallel()
		// The target answers at once, then trickles its body, a byte every
		// 50 ms, until the client goes away: the attempt is cut at its
		// timeout and fails as a timeout, whatever the status.
		for _, status := range []int{http.StatusOK, http.StatusAccepted, http.StatusServiceUnavailable} {
			t.Run(strconv.Itoa(status), func(t *testing.T) {
				t.Parallel()
				b := setup(t, testenv.Trickle(t, status))
				for _, typ := range []job.Type{jobtype.TypeWebhook, jobtype.TypePing} {
					tk := task(t, typ, map[string]string{"url": b.srv.URL})
					tk.Timeout = 300 * time.Millisecond
					out := execute(t, b.registry, tk)
					require.False(t, out.OK, "%s: %+v", typ, out)
					require.Equal(t, status, out.StatusCode)
					require.True(t, strings.HasPrefix(out.Error, "timeout after 300ms: status "+strconv.Itoa(status)), "%s: %q", typ, out.Error)
					require.NotEmpty(t, out.Output, "what came is kept")
				}
			})
		}
	})

	t.Run("BodyCutOtherwiseLeavesTheStatusToDecide", func(t *testing.T) {
		t.Parallel()
		// The target promises more than it sends and hangs up: the read
		// fails, not at the deadline, and a 2xx stays a success.
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		})
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL}))
		require.True(t, out.OK, out.Error)
		require.Equal(t, "partial", out.Output)
	})

	t.Run("TaskTimeoutBoundsALaterDeadline", func(t *testing.T) {
		t.Parallel()
		b := setup(t, hang(t))
		tk := task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL})
		tk.Timeout = 200 * time.Millisecond
		out := b.registry.Execute(t.Context(), tk)
		require.False(t, out.OK)
		require.Equal(t, "timeout after 200ms", out.Error)
	})

	t.Run("KeepsOnlyOutputLimitOfLargeBody", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
		})
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL}))
		require.True(t, out.OK, out.Error)
		require.Len(t, out.Output, jobtype.OutputLimit)
		require.Equal(t, strings.Repeat("x", jobtype.OutputLimit), out.Output)
	})

	t.Run("ReusesConnectionAfterSmallBody", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		conns := map[string]bool{}
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			conns[r.RemoteAddr] = true
			mu.Unlock()
			_, _ = w.Write([]byte(strings.Repeat("y", jobtype.OutputLimit+100)))
		})
		for range 5 {
			require.True(t, execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL})).OK)
		}
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, conns, 1, "a body just over the limit is drained and its connection reused")
	})

	t.Run("KeepsOutputValidUTF8", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			// 4095 ASCII bytes, then a 2-byte rune cut by the limit.
			_, _ = w.Write([]byte(strings.Repeat("a", jobtype.OutputLimit-1) + "é"))
		})
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL}))
		require.Equal(t, strings.Repeat("a", jobtype.OutputLimit-1), out.Output)

		b2 := setup(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("a\x00b\xffc")) })
		out = execute(t, b2.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b2.srv.URL}))
		require.Equal(t, "a\uFFFDb\uFFFDc", out.Output)
	})

	t.Run("FailsOnConnectionRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: refusedURL(t)}))
		require.False(t, out.OK)
		require.Zero(t, out.StatusCode)
		require.Contains(t, out.Error, "request failed:")
		require.Contains(t, out.Error, "connection refused")
	})

	t.Run("FailsOnDeniedTarget", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		c := outbound.NewClient(outbound.Options{})
		t.Cleanup(c.CloseIdleConnections)
		out := execute(t, jobtype.NewRegistry(jobtype.Deps{Client: c, Version: version}), task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL}))
		require.False(t, out.OK)
		require.Equal(t, "target address not allowed", out.Error, "the owner learns nothing of where the name led")
		require.Empty(t, b.received())
	})

	t.Run("ErrorsCarryNoSecrets", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		out := execute(t, b.registry, task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{
			URL:     refusedURL(t) + "?token=s3cret",
			Headers: map[string]string{"Authorization": "Bearer hunter2"},
		}))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "connection refused")
		require.NotContains(t, out.Error, "s3cret")
		require.NotContains(t, out.Error, "hunter2")
	})

	t.Run("FailsOnInvalidPayload", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypeWebhook, nil)
		tk.Payload = json.RawMessage(`{"url": 5}`)
		out := execute(t, b.registry, tk)
		require.False(t, out.OK)
		require.Contains(t, out.Error, "invalid webhook payload")
	})
}

func TestPing(t *testing.T) {
	t.Parallel()

	t.Run("SucceedsOn2xx", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
		tk := task(t, jobtype.TypePing, jobtype.PingPayload{URL: b.srv.URL + "/health"})
		out := execute(t, b.registry, tk)
		require.True(t, out.OK, out.Error)
		require.Equal(t, http.StatusNoContent, out.StatusCode)
		got := b.received()
		require.Len(t, got, 1)
		require.Equal(t, http.MethodGet, got[0].Method)
		require.Equal(t, "/health", got[0].Path)
		require.Empty(t, got[0].Body)
	})

	t.Run("SendsTockHeaders", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypePing, jobtype.PingPayload{URL: b.srv.URL})
		require.True(t, execute(t, b.registry, tk).OK)
		h := b.received()[0].Header
		require.Equal(t, tk.Key, h.Get("Idempotency-Key"))
		require.Equal(t, jobID.String(), h.Get("X-Tock-Job-Id"))
		require.Equal(t, "2026-11-22T09:00:00.000Z", h.Get("X-Tock-Scheduled-For"))
		require.Equal(t, "2", h.Get("X-Tock-Attempt"))
		require.Equal(t, "tock/"+version, h.Get("User-Agent"))
		require.Empty(t, h.Get("Content-Type"))
	})

	t.Run("FailsOnNon2xx", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "maintenance")
		})
		out := execute(t, b.registry, task(t, jobtype.TypePing, jobtype.PingPayload{URL: b.srv.URL}))
		require.False(t, out.OK)
		require.Equal(t, http.StatusServiceUnavailable, out.StatusCode)
		require.Equal(t, "status 503: maintenance", out.Error)
	})

	t.Run("TimesOut", func(t *testing.T) {
		t.Parallel()
		b := setup(t, hang(t))
		tk := task(t, jobtype.TypePing, jobtype.PingPayload{URL: b.srv.URL})
		tk.Timeout = 150 * time.Millisecond
		out := execute(t, b.registry, tk)
		require.False(t, out.OK)
		require.Equal(t, "timeout after 150ms", out.Error)
	})

	t.Run("FailsOnConnectionRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		out := execute(t, b.registry, task(t, jobtype.TypePing, jobtype.PingPayload{URL: refusedURL(t)}))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "connection refused")
	})
}

func TestRegistry(t *testing.T) {
	t.Parallel()

	t.Run("FailsOnUnknownType", func(t *testing.T) {
		t.Parallel()
		r := jobtype.NewRegistry(jobtype.Deps{Client: http.DefaultClient, Version: version})
		out := r.Execute(t.Context(), jobtype.Task{Type: "sms"})
		require.False(t, out.OK)
		require.Equal(t, "no executor for type sms", out.Error)
	})

	t.Run("RegisterAddsAType", func(t *testing.T) {
		t.Parallel()
		r := jobtype.NewRegistry(jobtype.Deps{Client: http.DefaultClient, Version: version})
		r.Register(jobtype.TypeEmail, executorFunc(func(context.Context, jobtype.Task) jobtype.Outcome {
			return jobtype.Outcome{OK: true, Output: "sent"}
		}))
		out := r.Execute(t.Context(), jobtype.Task{Type: jobtype.TypeEmail})
		require.True(t, out.OK)
		require.Equal(t, "sent", out.Output)
	})
}

type executorFunc func(context.Context, jobtype.Task) jobtype.Outcome

func (f executorFunc) Execute(ctx context.Context, t jobtype.Task) jobtype.Outcome {
	return f(ctx, t)
}
