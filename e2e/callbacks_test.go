package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// answering is a target that answers each delivery 201 with a body of its
// own ("answer <n>") and a header, and remembers which occurrence got
// which body.
type answering struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string]string // X-Tock-Scheduled-For → body
}

func newAnswering() *answering {
	a := &answering{bodies: map[string]string{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		body := "answer " + strconv.Itoa(len(a.bodies)+1)
		a.bodies[r.Header.Get("X-Tock-Scheduled-For")] = body
		a.mu.Unlock()
		w.Header().Set("X-Answered-By", "target")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, body)
	}))
	return a
}

func (a *answering) body(scheduledFor string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bodies[scheduledFor]
}

// callbackSink records the callbacks it takes. While held, it holds each
// request until released (a URL that hangs), then refuses it with a 503.
type callbackSink struct {
	*httptest.Server
	mu       sync.Mutex
	taken    []callbackGot
	refused  map[string]int // Idempotency-Key → tries refused
	held     bool
	holding  int
	released chan struct{}
}

type callbackGot struct {
	key, signature string
	body           []byte
	doc            map[string]any
}

func newCallbackSink(held bool) *callbackSink {
	s := &callbackSink{held: held, refused: map[string]int{}, released: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Header.Get("Idempotency-Key")
		s.mu.Lock()
		held := s.held
		if held {
			s.holding++
		}
		s.mu.Unlock()
		if held {
			select {
			case <-s.released:
			case <-r.Context().Done():
			}
			s.mu.Lock()
			s.refused[key]++
			s.mu.Unlock()
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var doc map[string]any
		_ = json.Unmarshal(body, &doc)
		s.mu.Lock()
		s.taken = append(s.taken, callbackGot{key: key, signature: r.Header.Get("X-Tock-Signature"), body: body, doc: doc})
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return s
}

// release ends the hold: held requests are refused, later ones taken.
func (s *callbackSink) release() {
	s.mu.Lock()
	s.held = false
	s.mu.Unlock()
	close(s.released)
}

func (s *callbackSink) got() []callbackGot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]callbackGot(nil), s.taken...)
}

func (s *callbackSink) holds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holding
}

// completedRuns is the scheduled times of job's completed runs, once none
// is running.
func completedRuns(t *testing.T, api *cluster.API, jobID string) (map[string]bool, bool) {
	t.Helper()
	runs, err := api.Runs(t.Context(), jobID, 100)
	if err != nil {
		return nil, false
	}
	out := map[string]bool{}
	for _, r := range runs {
		if r.Status == "running" {
			return nil, false
		}
		if r.Status == "completed" {
			out[r.ScheduledFor.UTC().Format("2006-01-02T15:04:05.000Z07:00")] = true
		}
	}
	return out, true
}

// TestCallbacks is the completion callback acceptance on the real
// services: a callback receives the target's status, headers and body
// exactly once per completed occurrence, signed, with the job's own
// credentials in its headers; and a callback URL that hangs, then
// refuses, delays none of the job's occurrences, and takes each callback
// once it is back (retried under the same Idempotency-Key).
func TestCallbacks(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	api := c.API()
	ctx := t.Context()
	var secret struct {
		Secret string `json:"secret"`
	}
	code, err := api.Do(ctx, http.MethodGet, "/api/v1/signing-secret", nil, &secret)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)

	t.Run("OncePerCompletedOccurrence", func(t *testing.T) {
		target := newAnswering()
		defer target.Close()
		sink := newCallbackSink(false)
		defer sink.Close()
		t0 := ceilSecond(time.Now().Add(2 * time.Second))
		j, err := api.CreateJob(ctx, map[string]any{"name": "answers", "type": "webhook",
			"schedule": map[string]any{"cron": "* * * * * *", "start_at": t0, "end_at": t0.Add(4 * time.Second)},
			"notify": map[string]any{"on": []string{"completed"},
				"callback": map[string]any{"url": sink.URL + "/cb", "headers": map[string]string{"Authorization": "Bearer cb-s3cret"}}},
			"payload": hookTo(target.URL + "/work")})
		require.NoError(t, err)

		// The job's view shows the callback's credential as a fingerprint.
		var view struct {
			Notify struct {
				Callback struct {
					Headers map[string]string `json:"headers"`
				} `json:"callback"`
			} `json:"notify"`
		}
		code, err := api.Do(ctx, http.MethodGet, "/api/v1/jobs/"+j.ID, nil, &view)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.NotContains(t, view.Notify.Callback.Headers["Authorization"], "cb-s3cret")

		var completed map[string]bool
		require.True(t, cluster.WaitUntil(30*time.Second, 200*time.Millisecond, func() bool {
			var ok bool
			completed, ok = completedRuns(t, api, j.ID)
			return ok && len(completed) >= 4 && len(sink.got()) >= len(completed)
		}), "each completed occurrence called back")
		time.Sleep(1500 * time.Millisecond) // a duplicate would arrive meanwhile
		got := sink.got()
		require.Len(t, got, len(completed), "one callback per completed occurrence")
		seen := map[string]bool{}
		for _, cb := range got {
			run := cb.doc["run"].(map[string]any)
			sched := run["scheduled_for"].(string)
			at, err := time.Parse(time.RFC3339Nano, sched)
			require.NoError(t, err)
			key := at.UTC().Format("2006-01-02T15:04:05.000Z07:00")
			require.True(t, completed[key], "it names a completed occurrence")
			require.False(t, seen[key], "once per occurrence")
			seen[key] = true
			require.Equal(t, "completed", cb.doc["event"])
			require.Equal(t, j.ID, cb.doc["job"].(map[string]any)["id"])
			require.Equal(t, "completed", run["status"])
			require.NotEmpty(t, run["id"])
			answer := cb.doc["answer"].(map[string]any)
			require.EqualValues(t, http.StatusCreated, answer["status"])
			require.Equal(t, target.body(key), answer["body"], "the target's own answer to that occurrence")
			require.NotEmpty(t, answer["body"])
			require.Equal(t, "target", answer["headers"].(map[string]any)["X-Answered-By"])
			require.Equal(t, "callback/completed/"+j.ID+":"+strconv.FormatInt(at.UnixMilli(), 10)+"/1", cb.key)
			require.True(t, verifySignature(secret.Secret, cb.signature, cb.body), "signed like every delivery")
		}
	})

	t.Run("ADownURLDelaysNoOccurrence", func(t *testing.T) {
		target := cluster.NewTarget()
		defer target.Close()
		sink := newCallbackSink(true)
		defer sink.Close()
		t0 := ceilSecond(time.Now().Add(2 * time.Second))
		j, err := api.CreateJob(ctx, map[string]any{"name": "called back late", "type": "webhook",
			"schedule": map[string]any{"cron": "* * * * * *", "start_at": t0, "end_at": t0.Add(5 * time.Second)},
			"notify":   map[string]any{"on": []string{"completed"}, "callback": map[string]any{"url": sink.URL + "/cb"}},
			"payload":  hookTo(target.URL + "/work")})
		require.NoError(t, err)

		// Every occurrence runs while the callback URL holds its calls.
		require.True(t, target.WaitFor(30*time.Second, func(d []cluster.Delivery) bool { return len(cluster.ForJob(d, j.ID)) >= 5 }),
			"the job's occurrences run while its callbacks hang")
		require.Positive(t, sink.holds(), "callbacks were in flight, held")
		require.Empty(t, sink.got())
		sink.release()

		var completed map[string]bool
		require.True(t, cluster.WaitUntil(40*time.Second, 200*time.Millisecond, func() bool {
			var ok bool
			completed, ok = completedRuns(t, api, j.ID)
			return ok && len(completed) >= 5 && len(sink.got()) >= len(completed)
		}), "each callback taken once the URL is back")
		time.Sleep(1500 * time.Millisecond)
		got := sink.got()
		require.Len(t, got, len(completed), "each taken once")
		keys := map[string]bool{}
		for _, cb := range got {
			require.False(t, keys[cb.key], "once per occurrence")
			keys[cb.key] = true
		}
		sink.mu.Lock()
		defer sink.mu.Unlock()
		for key := range sink.refused {
			require.True(t, keys[key], "a refused try is tried again under the same Idempotency-Key")
		}
	})
}
