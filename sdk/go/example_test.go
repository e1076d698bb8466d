package tock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	tock "github.com/tockhq/tock/sdk/go"
)

// fakeDashboard stands in for a tock dashboard so that the examples print
// something; it knows creating, getting and listing jobs, nothing more. The
// SDK's tests against the real services are e2e/sdk_test.go.
func fakeDashboard() *httptest.Server {
	var mu sync.Mutex
	var jobs []map[string]any
	replies := map[string]map[string]any{} // by Idempotency-Key
	fail := func(w http.ResponseWriter, status int, code, msg, field string) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg, "field": field}})
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/jobs":
			if j, ok := replies[r.Header.Get("Idempotency-Key")]; ok {
				w.WriteHeader(http.StatusCreated)
				json.NewEncoder(w).Encode(j)
				return
			}
			var spec map[string]any
			json.NewDecoder(r.Body).Decode(&spec)
			if spec["schedule"] == nil {
				fail(w, http.StatusBadRequest, "invalid", "a job needs run_at, delay, run_on or schedule", "schedule")
				return
			}
			spec["id"] = fmt.Sprintf("0193a000-0000-7000-8000-%012d", len(jobs)+1)
			spec["status"] = "scheduled"
			jobs = append(jobs, spec)
			replies[r.Header.Get("Idempotency-Key")] = spec
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(spec)
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/jobs":
			// Pages of one job, to show the iterator following next_cursor.
			i := 0
			fmt.Sscan(r.URL.Query().Get("cursor"), &i)
			page := map[string]any{"jobs": jobs[i : i+1], "next_cursor": ""}
			if i+1 < len(jobs) {
				page["next_cursor"] = fmt.Sprint(i + 1)
			}
			json.NewEncoder(w).Encode(page)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/jobs/"):
			for _, j := range jobs {
				if j["id"] == strings.TrimPrefix(r.URL.Path, "/api/v1/jobs/") {
					json.NewEncoder(w).Encode(j)
					return
				}
			}
			fail(w, http.StatusNotFound, "not_found", "no such job", "")
		default:
			fail(w, http.StatusNotFound, "not_found", "no such route", "")
		}
	}))
}

func ExampleJobsService_Create() {
	srv := fakeDashboard()
	defer srv.Close()
	ctx := context.Background()
	c := tock.New(srv.URL, "my-api-key")

	// Every first Monday of the month at 09:00 in Berlin. The create carries
	// an Idempotency-Key, so a retry after a 429 or 503 creates one job.
	job, err := c.Jobs.Create(ctx, tock.JobSpec{
		Name:     "monthly report",
		Type:     "webhook",
		Schedule: &tock.Schedule{RRule: "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0", Timezone: "Europe/Berlin"},
		Payload:  tock.WebhookPayload{URL: "https://example.com/hook"},
		Labels:   map[string]string{"team": "finance"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.ID, job.Status)
	// Output: 0193a000-0000-7000-8000-000000000001 scheduled
}

func ExampleJobsService_All() {
	srv := fakeDashboard()
	defer srv.Close()
	ctx := context.Background()
	c := tock.New(srv.URL, "my-api-key")
	for _, name := range []string{"a", "b", "c"} {
		c.Jobs.Create(ctx, tock.JobSpec{Name: name, Type: "ping", Schedule: &tock.Schedule{Every: "day", At: "09:00"},
			Payload: tock.PingPayload{URL: "https://example.com/" + name}})
	}

	// All follows next_cursor from page to page.
	for job, err := range c.Jobs.All(ctx, tock.JobFilter{Labels: map[string]string{"team": "ops"}}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(job.Name)
	}
	// Output:
	// a
	// b
	// c
}

func ExampleError() {
	srv := fakeDashboard()
	defer srv.Close()
	ctx := context.Background()
	c := tock.New(srv.URL, "my-api-key")

	_, err := c.Jobs.Get(ctx, "0193a000-0000-7000-8000-0000000000ff")
	fmt.Println(tock.IsNotFound(err))

	_, err = c.Jobs.Create(ctx, tock.JobSpec{Name: "no timing", Type: "ping", Payload: tock.PingPayload{URL: "https://example.com"}})
	var e *tock.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code, e.Field)
	}
	// Output:
	// true
	// 400 invalid schedule
}

func ExampleIdempotencyKey() {
	srv := fakeDashboard()
	defer srv.Close()
	ctx := context.Background()
	c := tock.New(srv.URL, "my-api-key", tock.WithRetries(5, 200*time.Millisecond, 5*time.Second))

	// Your own key makes a create safe to repeat across restarts of your
	// program too: the second call gets the first job back.
	spec := tock.JobSpec{Name: "reminder", Type: "ping", Schedule: &tock.Schedule{Every: "day"},
		Payload: tock.PingPayload{URL: "https://example.com"}}
	first, _ := c.Jobs.Create(ctx, spec, tock.IdempotencyKey("order-1234-reminder"))
	again, _ := c.Jobs.Create(ctx, spec, tock.IdempotencyKey("order-1234-reminder"))
	fmt.Println(first.ID == again.ID)
	// Output: true
}
