package tock

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a fake dashboard: it answers each request with the next of
// answers (the last one repeated) and keeps what it was sent.
type recorder struct {
	mu      sync.Mutex
	answers []answer
	got     []*http.Request
	bodies  []string
}

type answer struct {
	status int
	header map[string]string
	body   string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	body, _ := io.ReadAll(req.Body)
	r.got = append(r.got, req)
	r.bodies = append(r.bodies, string(body))
	a := r.answers[min(len(r.got), len(r.answers))-1]
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	w.Write([]byte(a.body))
}

// setup starts a fake dashboard with answers and a client of it whose
// retries record their waits instead of sleeping.
func setup(t *testing.T, answers ...answer) (*Client, *recorder, *[]time.Duration) {
	t.Helper()
	rec := &recorder{answers: answers}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	c := New(srv.URL, "secret-token")
	var waits []time.Duration
	c.retry.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, rec, &waits
}

const jobJSON = `{"id":"0193a000-0000-7000-8000-000000000001","name":"report","type":"ping","status":"scheduled",
"payload":{"url":"https://example.com"},"priority":0,"max_retries":3,"timeout":"30s","history":"all","labels":{},
"run_at":null,"timezone":"UTC","next_run_at":"2026-12-07T08:00:00.000Z","created_at":"2026-12-01T08:00:00.000Z",
"updated_at":"2026-12-01T08:00:00.000Z","owner":"0193a000-0000-7000-8000-0000000000aa","last_run":null}`

func TestCreate(t *testing.T) {
	t.Parallel()

	t.Run("RetriesWithOneIdempotencyKey", func(t *testing.T) {
		t.Parallel()
		c, rec, waits := setup(t,
			answer{status: 429, header: map[string]string{"Retry-After": "2"}, body: `{"error":{"code":"rate_limited","message":"slow down"}}`},
			answer{status: 503, body: `{"error":{"code":"unavailable","message":"try again"}}`},
			answer{status: 201, body: jobJSON})
		j, err := c.Jobs.Create(t.Context(), JobSpec{Name: "report", Type: "ping", Payload: PingPayload{URL: "https://example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		if j.ID != "0193a000-0000-7000-8000-000000000001" || j.NextRunAt == nil || j.RunAt != nil {
			t.Fatalf("job decoded as %+v", j)
		}
		if len(rec.got) != 3 {
			t.Fatalf("sent %d requests, want 3", len(rec.got))
		}
		key := rec.got[0].Header.Get("Idempotency-Key")
		if key == "" {
			t.Fatal("a create carries no Idempotency-Key")
		}
		for i, r := range rec.got {
			if got := r.Header.Get("Idempotency-Key"); got != key {
				t.Fatalf("try %d carries key %q, want %q", i+1, got, key)
			}
			if rec.bodies[i] != rec.bodies[0] {
				t.Fatalf("try %d sent another body: %s", i+1, rec.bodies[i])
			}
			if r.Header.Get("Authorization") != "Bearer secret-token" {
				t.Fatalf("try %d: Authorization %q", i+1, r.Header.Get("Authorization"))
			}
		}
		if (*waits)[0] != 2*time.Second {
			t.Fatalf("waited %v after Retry-After: 2", (*waits)[0])
		}
	})

	t.Run("CallersKey", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 201, body: jobJSON})
		_, err := c.Jobs.Create(t.Context(), JobSpec{Name: "report", Type: "ping"}, IdempotencyKey("order-1234"))
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.got[0].Header.Get("Idempotency-Key"); got != "order-1234" {
			t.Fatalf("Idempotency-Key %q", got)
		}
	})

	t.Run("TwoCallsTwoKeys", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 201, body: jobJSON})
		for range 2 {
			if _, err := c.Jobs.Create(t.Context(), JobSpec{Name: "report", Type: "ping"}); err != nil {
				t.Fatal(err)
			}
		}
		if rec.got[0].Header.Get("Idempotency-Key") == rec.got[1].Header.Get("Idempotency-Key") {
			t.Fatal("two creates share a key: the second would be a replay of the first")
		}
	})
}

func TestRetry(t *testing.T) {
	t.Parallel()

	t.Run("GivesUpAfterFiveTries", func(t *testing.T) {
		t.Parallel()
		c, rec, waits := setup(t, answer{status: 503, body: `{"error":{"code":"unavailable","message":"down"}}`})
		_, err := c.Jobs.Get(t.Context(), "x")
		var e *Error
		if !errors.As(err, &e) || e.Status != 503 || e.Code != "unavailable" {
			t.Fatalf("err = %v", err)
		}
		if len(rec.got) != 5 {
			t.Fatalf("sent %d requests, want 5", len(rec.got))
		}
		for i := 1; i < len(*waits); i++ {
			if (*waits)[i] < (*waits)[i-1] {
				t.Fatalf("backoff shrank: %v", *waits)
			}
		}
	})

	t.Run("No503RetryOfAnUnkeyedAction", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 503, body: `{"error":{"code":"unavailable","message":"down"}}`})
		if _, err := c.Jobs.Trigger(t.Context(), "x"); err == nil {
			t.Fatal("no error")
		}
		if len(rec.got) != 1 {
			t.Fatalf("a trigger without a key was sent %d times", len(rec.got))
		}
	})

	t.Run("A409OfAHeldKeyWithRetryAfter", func(t *testing.T) {
		t.Parallel()
		held := `{"error":{"code":"conflict","field":"Idempotency-Key","message":"still being answered"}}`
		c, rec, waits := setup(t, answer{status: 409, header: map[string]string{"Retry-After": "1"}, body: held},
			answer{status: 201, body: jobJSON})
		if _, err := c.Jobs.Create(t.Context(), JobSpec{Name: "x", Type: "ping"}); err != nil {
			t.Fatalf("create: %v", err)
		}
		if len(rec.got) != 2 || (*waits)[0] != time.Second {
			t.Fatalf("sent %d requests, waited %v", len(rec.got), *waits)
		}
		if rec.got[0].Header.Get("Idempotency-Key") != rec.got[1].Header.Get("Idempotency-Key") {
			t.Fatal("the repeat changed its Idempotency-Key")
		}
	})

	t.Run("No409RetryOfAConflict", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 409, body: `{"error":{"code":"conflict","message":"exists"}}`})
		if _, err := c.Jobs.Create(t.Context(), JobSpec{Name: "x", Type: "ping"}); err == nil {
			t.Fatal("no error")
		}
		if len(rec.got) != 1 {
			t.Fatalf("a conflict was sent %d times", len(rec.got))
		}
	})

	t.Run("StopsWithTheContext", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 429, body: `{"error":{"code":"rate_limited","message":"slow"}}`})
		ctx, cancel := context.WithCancel(t.Context())
		c.retry.sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
		_, err := c.Jobs.Get(ctx, "x")
		if !errors.Is(err, context.Canceled) || len(rec.got) != 1 {
			t.Fatalf("err = %v after %d requests", err, len(rec.got))
		}
	})

	t.Run("CapsRetryAfter", func(t *testing.T) {
		t.Parallel()
		c, _, waits := setup(t, answer{status: 429, header: map[string]string{"Retry-After": "3600"}, body: `{}`}, answer{status: 200, body: jobJSON})
		WithRetries(3, time.Millisecond, 5*time.Second)(c)
		if _, err := c.Jobs.Get(t.Context(), "x"); err != nil {
			t.Fatal(err)
		}
		if (*waits)[0] != 5*time.Second {
			t.Fatalf("waited %v", (*waits)[0])
		}
	})
}

func TestError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer answer
		check  func(error) bool
		want   Error
	}{
		{"NotFound", answer{status: 404, body: `{"error":{"code":"not_found","message":"no such job"}}`}, IsNotFound,
			Error{Status: 404, Code: "not_found", Message: "no such job"}},
		{"InvalidField", answer{status: 400, body: `{"error":{"code":"invalid","message":"bad cron","field":"schedule.cron"}}`}, IsInvalid,
			Error{Status: 400, Code: "invalid", Message: "bad cron", Field: "schedule.cron"}},
		{"NotTheAPIsShape", answer{status: 502, body: `<html>bad gateway</html>`}, func(err error) bool { return !IsNotFound(err) },
			Error{Status: 502, Message: "<html>bad gateway</html>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _, _ := setup(t, tt.answer)
			_, err := c.Jobs.Get(t.Context(), "x")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, not an *Error", err)
			}
			if e.Status != tt.want.Status || e.Code != tt.want.Code || e.Message != tt.want.Message || e.Field != tt.want.Field {
				t.Fatalf("got %+v, want %+v", *e, tt.want)
			}
			if !tt.check(err) {
				t.Fatalf("helper does not recognise %v", err)
			}
		})
	}

	t.Run("BatchItems", func(t *testing.T) {
		t.Parallel()
		c, _, _ := setup(t, answer{status: 400, body: `{"error":{"code":"invalid","message":"2 jobs are invalid"},
			"errors":[{"index":0,"field":"name","message":"required"},{"index":3,"message":"bad"}]}`})
		_, err := c.Jobs.Batch(t.Context(), BatchRequest{Jobs: []JobSpec{{Name: "x"}}})
		var e *Error
		if !errors.As(err, &e) || len(e.Items) != 2 || e.Items[0].Field != "name" || e.Items[1].Index != 3 {
			t.Fatalf("err = %#v", err)
		}
	})
}

func TestAll(t *testing.T) {
	t.Parallel()
	page := func(ids []string, next string) answer {
		jobs := make([]map[string]string, len(ids))
		for i, id := range ids {
			jobs[i] = map[string]string{"id": id}
		}
		b, _ := json.Marshal(map[string]any{"jobs": jobs, "next_cursor": next})
		return answer{status: 200, body: string(b)}
	}
	c, rec, _ := setup(t, page([]string{"a", "b"}, "c1"), page([]string{"c"}, "c2"), page(nil, ""))
	var ids []string
	for j, err := range c.Jobs.All(t.Context(), JobFilter{Labels: map[string]string{"team": "ops", "env": "prod"}, Status: "scheduled"}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("ids %v", ids)
	}
	if q := rec.got[0].URL.Query(); strings.Join(q["label"], ",") != "env=prod,team=ops" || q.Get("status") != "scheduled" || q.Has("cursor") {
		t.Fatalf("first query %v", q)
	}
	if q := rec.got[2].URL.Query(); q.Get("cursor") != "c2" {
		t.Fatalf("third query %v", q)
	}
}

func TestPut(t *testing.T) {
	t.Parallel()
	c, rec, _ := setup(t, answer{status: 201, body: jobJSON}, answer{status: 200, body: jobJSON})
	_, created, err := c.Jobs.Put(t.Context(), "nightly/report", JobSpec{Name: "report", Type: "ping"})
	if err != nil || !created {
		t.Fatalf("created %v, err %v", created, err)
	}
	_, created, err = c.Jobs.Put(t.Context(), "nightly/report", JobSpec{Name: "report", Type: "ping"})
	if err != nil || created {
		t.Fatalf("created %v, err %v", created, err)
	}
	if p := rec.got[0].URL.EscapedPath(); p != "/api/v1/jobs/by-key/nightly%2Freport" {
		t.Fatalf("path %s", p)
	}
	if rec.got[0].Method != http.MethodPut || rec.got[0].Header.Get("Idempotency-Key") == "" {
		t.Fatalf("%s with key %q", rec.got[0].Method, rec.got[0].Header.Get("Idempotency-Key"))
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		got, ok := retryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestRotateSigningSecretReplay: a replayed rotation holds the secret's
// fingerprint, so the client reads the secret with GET instead.
func TestRotateSigningSecretReplay(t *testing.T) {
	t.Parallel()
	const secret = "5f1e0c9d8b7a69584736251403f2e1d0c9b8a79685746352413f2e1d0c9b8a7f"
	c, rec, _ := setup(t,
		answer{status: 200, header: map[string]string{"Idempotent-Replayed": "true"},
			body: `{"secret":"secret:sha256:0123456789abcdef0123456789abcdef","header":"X-Tock-Signature","scheme":"s","previous_valid_until":null,"note":"n"}`},
		answer{status: 200, body: `{"secret":"` + secret + `","header":"X-Tock-Signature","scheme":"s","previous_valid_until":null}`})
	s, err := c.RotateSigningSecret(t.Context(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if s.Secret != secret {
		t.Fatalf("secret %q, want the one GET shows", s.Secret)
	}
	if len(rec.got) != 2 || rec.got[1].Method != http.MethodGet || rec.got[1].URL.Path != "/api/v1/signing-secret" {
		t.Fatalf("requests %v", rec.got)
	}
}
