package tock

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"
)

const backfillJSON = `{"id":"0193a000-0000-7000-8000-0000000000b1","job_id":"0193a000-0000-7000-8000-000000000001",
"from":"2026-11-01T00:00:00.000Z","to":"2026-11-08T00:00:00.000Z","overlap":"skip","status":"running",
"total":168,"existing":20,"queued":30,"running":2,"completed":25,"failed":1,"skipped":2,"remaining":118,
"created_at":"2026-12-01T08:00:00.000Z","finished_at":null}`

const cancelledJSON = `{"id":"0193a000-0000-7000-8000-0000000000b1","job_id":"0193a000-0000-7000-8000-000000000001",
"from":"2026-11-01T00:00:00.000Z","to":"2026-11-08T00:00:00.000Z","overlap":"skip","status":"cancelled","reason":"cancelled by a DELETE",
"total":168,"existing":20,"queued":30,"running":0,"completed":27,"failed":1,"skipped":2,"remaining":118,
"created_at":"2026-12-01T08:00:00.000Z","finished_at":"2026-12-01T08:05:00.000Z"}`

func TestBackfill(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, 7)

	t.Run("PostsTheRangeWithOneIdempotencyKey", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t,
			answer{status: 503, body: `{"error":{"code":"unavailable","message":"try again"}}`},
			answer{status: 202, header: map[string]string{"Location": "/api/v1/backfills/0193a000-0000-7000-8000-0000000000b1"}, body: backfillJSON})
		b, err := c.Jobs.Backfill(t.Context(), "0193a000-0000-7000-8000-000000000001", BackfillRequest{From: from, To: to, Overlap: OverlapSkip})
		if err != nil {
			t.Fatal(err)
		}
		if b.ID != "0193a000-0000-7000-8000-0000000000b1" || b.Status != BackfillRunning || b.Total != 168 || b.Remaining != 118 ||
			b.FinishedAt != nil || !b.From.Equal(from) {
			t.Fatalf("backfill decoded as %+v", b)
		}
		if len(rec.got) != 2 {
			t.Fatalf("sent %d requests, want 2: a keyed create is retried after a 503", len(rec.got))
		}
		r := rec.got[0]
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/jobs/0193a000-0000-7000-8000-000000000001/backfill" {
			t.Fatalf("sent %s %s", r.Method, r.URL.Path)
		}
		key := r.Header.Get("Idempotency-Key")
		if key == "" || rec.got[1].Header.Get("Idempotency-Key") != key {
			t.Fatalf("keys %q and %q, want one key on both tries", key, rec.got[1].Header.Get("Idempotency-Key"))
		}
		var body map[string]string
		if err := json.Unmarshal([]byte(rec.bodies[0]), &body); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"from": "2026-11-01T00:00:00Z", "to": "2026-11-08T00:00:00Z", "overlap": "skip"}
		if len(body) != len(want) || body["from"] != want["from"] || body["to"] != want["to"] || body["overlap"] != want["overlap"] {
			t.Fatalf("body %s, want %v", rec.bodies[0], want)
		}
	})

	t.Run("NoOverlapLeavesTheJobsOwn", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 202, body: backfillJSON})
		if _, err := c.Jobs.Backfill(t.Context(), "j", BackfillRequest{From: from, To: to}, IdempotencyKey("fill-november")); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(rec.bodies[0]), &body); err != nil {
			t.Fatal(err)
		}
		if _, ok := body["overlap"]; ok {
			t.Fatalf("body %s sends an overlap", rec.bodies[0])
		}
		if got := rec.got[0].Header.Get("Idempotency-Key"); got != "fill-november" {
			t.Fatalf("Idempotency-Key %q", got)
		}
	})

	t.Run("RefusedRangeNamesTheField", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 400, body: `{"error":{"code":"invalid","message":"must not be in the future","field":"to"}}`})
		_, err := c.Jobs.Backfill(t.Context(), "j", BackfillRequest{From: from, To: time.Now().Add(time.Hour)})
		var e *Error
		if !errors.As(err, &e) || !IsInvalid(err) || e.Field != "to" || e.Message != "must not be in the future" {
			t.Fatalf("err = %#v", err)
		}
		if len(rec.got) != 1 {
			t.Fatalf("a refusal was sent %d times", len(rec.got))
		}
	})
}

func TestBackfills(t *testing.T) {
	t.Parallel()

	t.Run("ListsAJobsBackfills", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 200, body: `{"backfills":[` + cancelledJSON + `,` + backfillJSON + `]}`})
		bs, err := c.Jobs.Backfills(t.Context(), "0193a000-0000-7000-8000-000000000001")
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != 2 || bs[0].Status != BackfillCancelled || bs[1].Status != BackfillRunning {
			t.Fatalf("backfills %+v", bs)
		}
		if r := rec.got[0]; r.Method != http.MethodGet || r.URL.Path != "/api/v1/jobs/0193a000-0000-7000-8000-000000000001/backfills" {
			t.Fatalf("sent %s %s", r.Method, r.URL.Path)
		}
	})

	t.Run("Get", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 200, body: backfillJSON})
		b, err := c.Backfills.Get(t.Context(), "0193a000-0000-7000-8000-0000000000b1")
		if err != nil {
			t.Fatal(err)
		}
		if b.Queued != 30 || b.Existing != 20 || b.Failed != 1 || b.Skipped != 2 || b.Running != 2 {
			t.Fatalf("backfill decoded as %+v", b)
		}
		if r := rec.got[0]; r.Method != http.MethodGet || r.URL.Path != "/api/v1/backfills/0193a000-0000-7000-8000-0000000000b1" {
			t.Fatalf("sent %s %s", r.Method, r.URL.Path)
		}
	})

	t.Run("CancelIsRetried", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 503, body: `{"error":{"code":"unavailable","message":"down"}}`},
			answer{status: 200, body: cancelledJSON})
		b, err := c.Backfills.Cancel(t.Context(), "0193a000-0000-7000-8000-0000000000b1")
		if err != nil {
			t.Fatal(err)
		}
		if b.Status != BackfillCancelled || b.Reason == "" || b.FinishedAt == nil {
			t.Fatalf("backfill decoded as %+v", b)
		}
		if len(rec.got) != 2 {
			t.Fatalf("sent %d requests, want 2: a cancel is safe to repeat", len(rec.got))
		}
		if r := rec.got[0]; r.Method != http.MethodDelete || r.URL.Path != "/api/v1/backfills/0193a000-0000-7000-8000-0000000000b1" {
			t.Fatalf("sent %s %s", r.Method, r.URL.Path)
		}
	})

	t.Run("CancelOfACompletedOne", func(t *testing.T) {
		t.Parallel()
		c, _, _ := setup(t, answer{status: 409, body: `{"error":{"code":"conflict","message":"the backfill completed already"}}`})
		if _, err := c.Backfills.Cancel(t.Context(), "b"); !IsConflict(err) {
			t.Fatalf("err = %v, want a conflict", err)
		}
	})
}
