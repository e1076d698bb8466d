package tock

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"
)

const calendarJSON = `{"name":"de-holidays","timezone":"Europe/Berlin","dates":["2026-12-25","2026-12-26"],
"ranges":[{"from":"2026-12-31T22:00:00.000Z","to":"2027-01-01T02:00:00.000Z"}],"rrules":["FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1"],
"created_at":"2026-12-01T08:00:00.000Z","updated_at":"2026-12-01T08:00:00.000Z"}`

func TestCalendars(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 12, 31, 22, 0, 0, 0, time.UTC)
	req := CalendarRequest{Timezone: "Europe/Berlin", Dates: []string{"2026-12-25", "2026-12-26"},
		Ranges: []CalendarRequestRanges{{From: from, To: from.Add(4 * time.Hour)}},
		Rrules: []string{"FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1"}}

	t.Run("PutCreatesWithOneIdempotencyKey", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t,
			answer{status: 503, body: `{"error":{"code":"unavailable","message":"try again"}}`},
			answer{status: 201, body: calendarJSON})
		cal, created, err := c.Calendars.Put(t.Context(), "de-holidays", req)
		if err != nil {
			t.Fatal(err)
		}
		if !created {
			t.Fatal("a 201 is not reported created")
		}
		if cal.Name != "de-holidays" || cal.Timezone != "Europe/Berlin" || len(cal.Dates) != 2 || len(cal.Ranges) != 1 ||
			!cal.Ranges[0].From.Equal(from) || len(cal.Rrules) != 1 {
			t.Fatalf("calendar decoded as %+v", cal)
		}
		if len(rec.got) != 2 {
			t.Fatalf("sent %d requests, want 2: a PUT is retried after a 503", len(rec.got))
		}
		r := rec.got[0]
		if r.Method != http.MethodPut || r.URL.Path != "/api/v1/calendars/de-holidays" || r.URL.RawQuery != "" {
			t.Fatalf("sent %s %s?%s", r.Method, r.URL.Path, r.URL.RawQuery)
		}
		key := r.Header.Get("Idempotency-Key")
		if key == "" || rec.got[1].Header.Get("Idempotency-Key") != key {
			t.Fatalf("keys %q and %q, want one key on both tries", key, rec.got[1].Header.Get("Idempotency-Key"))
		}
		want := `{"dates":["2026-12-25","2026-12-26"],"ranges":[{"from":"2026-12-31T22:00:00Z","to":"2027-01-01T02:00:00Z"}],` +
			`"rrules":["FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1"],"timezone":"Europe/Berlin"}`
		if rec.bodies[0] != want {
			t.Fatalf("body %s, want %s", rec.bodies[0], want)
		}
	})

	t.Run("PutReplacesAndLeavesOutEmptyLists", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 200, body: calendarJSON})
		_, created, err := c.Calendars.Put(t.Context(), "de-holidays", CalendarRequest{Dates: []string{"2026-12-25"}}, IdempotencyKey("holidays-v2"))
		if err != nil {
			t.Fatal(err)
		}
		if created {
			t.Fatal("a 200 is reported created")
		}
		if rec.bodies[0] != `{"dates":["2026-12-25"]}` {
			t.Fatalf("body %s", rec.bodies[0])
		}
		if got := rec.got[0].Header.Get("Idempotency-Key"); got != "holidays-v2" {
			t.Fatalf("Idempotency-Key %q", got)
		}
	})

	t.Run("RefusedEntryNamesTheField", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 400, body: `{"error":{"code":"invalid","message":"must be a day written YYYY-MM-DD","field":"dates[1]"}}`})
		_, _, err := c.Calendars.Put(t.Context(), "x", CalendarRequest{Dates: []string{"2026-12-25", "25.12.2026"}})
		var e *Error
		if !errors.As(err, &e) || !IsInvalid(err) || e.Field != "dates[1]" {
			t.Fatalf("err = %#v", err)
		}
		if len(rec.got) != 1 {
			t.Fatalf("a refusal was sent %d times", len(rec.got))
		}
	})

	t.Run("GetEscapesTheName", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 404, body: `{"error":{"code":"not_found","message":"no such calendar","field":"name"}}`})
		if _, err := c.Calendars.Get(t.Context(), "a/b"); !IsNotFound(err) {
			t.Fatalf("err = %v, want not found", err)
		}
		if r := rec.got[0]; r.Method != http.MethodGet || r.URL.EscapedPath() != "/api/v1/calendars/a%2Fb" {
			t.Fatalf("sent %s %s", r.Method, r.URL.EscapedPath())
		}
	})

	t.Run("AllFollowsThePages", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t,
			answer{status: 200, body: `{"calendars":[` + calendarJSON + `],"next_cursor":"de-holidays"}`},
			answer{status: 200, body: `{"calendars":[` + calendarJSON + `],"next_cursor":""}`})
		n := 0
		for cal, err := range c.Calendars.All(t.Context()) {
			if err != nil {
				t.Fatal(err)
			}
			if cal.Name != "de-holidays" {
				t.Fatalf("calendar %+v", cal)
			}
			n++
		}
		if n != 2 || len(rec.got) != 2 {
			t.Fatalf("%d calendars from %d requests, want 2 from 2", n, len(rec.got))
		}
		if q := rec.got[0].URL.RawQuery; q != "" {
			t.Fatalf("first page asked with %q", q)
		}
		if q := rec.got[1].URL.Query().Get("cursor"); q != "de-holidays" {
			t.Fatalf("second page asked with cursor %q", q)
		}
	})

	t.Run("ListPage", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 200, body: `{"calendars":[],"next_cursor":""}`})
		page, err := c.Calendars.List(t.Context(), 20, "b")
		if err != nil {
			t.Fatal(err)
		}
		if page.Calendars == nil || len(page.Calendars) != 0 {
			t.Fatalf("page %+v", page)
		}
		if q := rec.got[0].URL.Query(); rec.got[0].URL.Path != "/api/v1/calendars" || q.Get("limit") != "20" || q.Get("cursor") != "b" || q.Has("owner") {
			t.Fatalf("sent %s?%s", rec.got[0].URL.Path, rec.got[0].URL.RawQuery)
		}
	})

	t.Run("OfSendsTheOwnerOnEveryCall", func(t *testing.T) {
		t.Parallel()
		const owner = "0193a000-0000-7000-8000-0000000000aa"
		c, rec, _ := setup(t, answer{status: 200, body: calendarJSON})
		of := c.Calendars.Of(owner)
		if _, _, err := of.Put(t.Context(), "de-holidays", req); err != nil {
			t.Fatal(err)
		}
		if _, err := of.Get(t.Context(), "de-holidays"); err != nil {
			t.Fatal(err)
		}
		if _, err := of.List(t.Context(), 5, ""); err != nil {
			t.Fatal(err)
		}
		if err := of.Delete(t.Context(), "de-holidays"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Calendars.Get(t.Context(), "de-holidays"); err != nil {
			t.Fatal(err)
		}
		for i, r := range rec.got[:4] {
			if got := r.URL.Query().Get("owner"); got != owner {
				t.Fatalf("call %d (%s %s) sent owner %q", i+1, r.Method, r.URL.Path, got)
			}
		}
		if rec.got[4].URL.RawQuery != "" {
			t.Fatalf("c.Calendars took the owner on too: %q", rec.got[4].URL.RawQuery)
		}
	})

	t.Run("DeleteInUse", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 409, body: `{"error":{"code":"conflict","message":"calendar de-holidays is named by 1 job: take it out of their skip_calendars first","field":"name"}}`})
		err := c.Calendars.Delete(t.Context(), "de-holidays")
		if !IsConflict(err) {
			t.Fatalf("err = %v, want a conflict", err)
		}
		if r := rec.got[0]; r.Method != http.MethodDelete || r.URL.Path != "/api/v1/calendars/de-holidays" || len(rec.got) != 1 {
			t.Fatalf("sent %s %s (%d requests)", r.Method, r.URL.Path, len(rec.got))
		}
	})
}

const previewJSON = `{"next":[{"at":"2026-12-24T09:00:00+01:00","utc":"2026-12-24T08:00:00Z"},
{"at":"2026-12-28T09:00:00+01:00","utc":"2026-12-28T08:00:00Z"}],
"skipped":[{"at":"2026-12-25T09:00:00+01:00","utc":"2026-12-25T08:00:00Z","reason":"calendar de-holidays: date 2026-12-25"}]}`

// TestSkipped: the previews' skipped occurrences reach the caller of the
// WithSkipped methods, and the older methods still answer the list alone.
func TestSkipped(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, o *Occurrences) {
		t.Helper()
		if len(o.Next) != 2 || !o.Next[1].UTC.Equal(time.Date(2026, 12, 28, 8, 0, 0, 0, time.UTC)) {
			t.Fatalf("next %+v", o.Next)
		}
		if len(o.Skipped) != 1 || !o.Skipped[0].UTC.Equal(time.Date(2026, 12, 25, 8, 0, 0, 0, time.UTC)) || o.Skipped[0].Reason != "calendar de-holidays: date 2026-12-25" {
			t.Fatalf("skipped %+v", o.Skipped)
		}
	}

	t.Run("NextWithSkipped", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 200, body: previewJSON})
		o, err := c.Jobs.NextWithSkipped(t.Context(), "j", 2)
		if err != nil {
			t.Fatal(err)
		}
		check(t, o)
		if r := rec.got[0]; r.Method != http.MethodGet || r.URL.Path != "/api/v1/jobs/j/next" || r.URL.RawQuery != "n=2" {
			t.Fatalf("sent %s %s?%s", r.Method, r.URL.Path, r.URL.RawQuery)
		}
		next, err := c.Jobs.Next(t.Context(), "j", 2)
		if err != nil || len(next) != 2 {
			t.Fatalf("Next = %v, %v", next, err)
		}
	})

	t.Run("PreviewWithSkipped", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := setup(t, answer{status: 200, body: previewJSON})
		o, err := c.PreviewWithSkipped(t.Context(), PreviewRequest{Schedule: &Schedule{Cron: "0 9 * * 1-5", Timezone: "Europe/Berlin"},
			SkipCalendars: []string{"de-holidays"}, N: 2})
		if err != nil {
			t.Fatal(err)
		}
		check(t, o)
		var body map[string]any
		if err := json.Unmarshal([]byte(rec.bodies[0]), &body); err != nil {
			t.Fatal(err)
		}
		if cals, _ := body["skip_calendars"].([]any); len(cals) != 1 || cals[0] != "de-holidays" {
			t.Fatalf("body %s", rec.bodies[0])
		}
		next, err := c.Preview(t.Context(), PreviewRequest{Schedule: &Schedule{Cron: "0 9 * * 1-5"}})
		if err != nil || len(next) != 2 {
			t.Fatalf("Preview = %v, %v", next, err)
		}
	})

	t.Run("NoneSkipped", func(t *testing.T) {
		t.Parallel()
		c, _, _ := setup(t, answer{status: 200, body: `{"next":[{"at":"2026-12-24T09:00:00+01:00","utc":"2026-12-24T08:00:00Z"}]}`})
		o, err := c.PreviewWithSkipped(t.Context(), PreviewRequest{Schedule: &Schedule{Cron: "0 9 * * 1-5"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Next) != 1 || o.Skipped != nil {
			t.Fatalf("occurrences %+v", o)
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != `{"next":[{"at":"2026-12-24T09:00:00+01:00","utc":"2026-12-24T08:00:00Z"}]}` {
			t.Fatalf("encoded as %s: skipped absent when none, as the API says", b)
		}
	})
}
