package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// fuzzBodyCap is the body cap of FuzzDecodeJob: the payload limit, so that a
// body can reach either, and room for nesting past encoding/json's depth limit.
const fuzzBodyCap = 64 << 10

// fuzzStatuses are the states FuzzDecodeJob puts a built job in before it
// patches it: only the first two can be edited.
var fuzzStatuses = []job.Status{
	job.StatusScheduled, job.StatusPaused, job.StatusCompleted, job.StatusPermanentlyFailed, job.StatusCancelled,
}

// FuzzDecodeJob drives the bodies of POST and PATCH /api/v1/jobs through what
// the handlers do with them: the body cap, decodeJob, then Build, and
// Prepare and Apply on the built job. No input may panic or yield a 5xx: every decode error is
// a 400 or 413 *apierr.Error, and every Build or Apply error maps to a 4xx as
// createJob and patchJob return it. A recurring job that is accepted must
// keep a schedule that compiles again from storage, or pausing and resuming
// it would fail with a 500 later.
func FuzzDecodeJob(f *testing.F) {
	const ping = `"payload":{"url":"https://example.com/health"}`
	for _, seed := range []struct{ spec, patch string }{
		// Valid jobs, patched validly.
		{`{"name":"a","type":"ping","run_at":"2030-01-15T15:00:00Z",` + ping + `}`, `{"name":"b"}`},
		{`{"name":"a","type":"ping","run_at":"2030-01-15T15:00:00.123456789+02:00",` + ping + `,"priority":5,"max_retries":0,"timeout":"1s"}`, `{"run_at":"2030-02-01T00:00:00Z"}`},
		{`{"name":"in 90 s","type":"ping","delay":"90s",` + ping + `}`, `{"delay":"4s"}`},
		{`{"name":"in 15 days","type":"ping","delay":"15d",` + ping + `}`, `{"delay":"1d12h","priority":-3}`},
		{`{"name":"on a day","type":"ping","run_on":"2030-03-01","timezone":"America/New_York",` + ping + `}`, `{"run_on":"2030-03-02","timezone":"Asia/Tokyo"}`},
		{`{"name":"once","type":"ping","run_at":"2030-01-16T00:00:00Z","timezone":"Asia/Tokyo",` + ping + `}`, `{"timezone":"Europe/Berlin"}`},
		{`{"name":"every 10 s","type":"ping","schedule":{"cron":"*/10 * * * * *","timezone":"Europe/Berlin"},` + ping + `}`, `{"priority":5}`},
		{`{"name":"five","type":"ping","schedule":{"cron":"*/10 * * * * *","count":5},` + ping + `}`, `{"schedule":{"cron":"*/30 * * * * *","timezone":"Europe/Berlin"}}`},
		{`{"name":"thrice","type":"ping","schedule":{"cron":"0 9 * * *","timezone":"Europe/Berlin","start_at":"2030-12-07T00:00:00Z","count":3},` + ping + `}`, `{"max_retries":10,"timeout":"2m"}`},
		{`{"name":"r","type":"ping","schedule":{"rrule":"FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0","timezone":"America/New_York","misfire":"catch_up","misfire_max":3},` + ping + `}`, `{"schedule":{"rrule":"FREQ=DAILY","end_at":"2031-01-01T00:00:00Z"}}`},
		{`{"name":"daily","type":"ping","schedule":{"every":"day","at":"09:00","timezone":"Europe/Berlin","start_at":"2030-12-07T00:00:00Z"},` + ping + `}`, `{"schedule":{"every":"week","on":"mon","at":"23:59:59"}}`},
		{`{"name":"monthly","type":"ping","schedule":{"every":"month","on":-1,"dst":{"gap":"skip","overlap":"both"}},` + ping + `}`, `{"schedule":{"every":"month","on":31,"misfire":"skip"}}`},
		{`{"name":"w","type":"webhook","delay":"1m","payload":{"url":"https://example.com/hook","method":"PUT","headers":{"X-Token":"abc"},"body":{"a":[1,2,{"b":null}]}}}`, `{"payload":{"url":"https://example.com/other","method":"DELETE"}}`},
		{`{"name":"s","type":"slack","delay":"0s","payload":{"webhook_url":"https://hooks.slack.com/services/T/B/X","text":"hi"}}`, `{"payload":{"webhook_url":"http://127.0.0.1/","text":""}}`},
		{`{"name":"m","type":"email","delay":"1h","payload":{"to":["a@example.com"],"cc":["B <b@example.com>"],"subject":"hi","text":"t","reply_to":"c@example.com"}}`, `{"payload":{"to":[],"subject":"x\r\nBcc: d@example.com"}}`},
		{`{"name":"p","type":"ping","delay":"1m","payload":{"url":"https://example.com/","expect_status":"200-299,304"}}`, `{"payload":{"url":"https://example.com/","expect_status":"600-100"}}`},
		// Refused by Build or Apply.
		{`{"name":"","type":"ping","delay":"1m",` + ping + `}`, `{"name":"   "}`},
		{`{"name":"a","type":"fax","delay":"1m",` + ping + `}`, `{"priority":1000}`},
		{`{"name":"a","type":"ping","run_at":"2020-01-01T00:00:00Z",` + ping + `}`, `{"run_at":"2020-01-01T00:00:00Z"}`},
		{`{"name":"a","type":"ping","delay":"1m","run_at":"2030-02-01T00:00:00Z",` + ping + `}`, `{"delay":"1m","schedule":{"cron":"@daily"}}`},
		{`{"name":"a","type":"ping","schedule":{"cron":"@daily"},"timezone":"Europe/Berlin",` + ping + `}`, `{"schedule":{"cron":"0 0 30 2 *"}}`},
		{`{"name":"a","type":"ping","run_on":"2030-12-24",` + ping + `}`, `{"run_on":"24.12.2030","timezone":"Local"}`},
		{`{"name":"a","type":"ping","delay":"-1h",` + ping + `}`, `{"delay":"99999999d"}`},
		{`{"name":"a","type":"ping","delay":"1m","payload":{"url":"ftp://example.com"}}`, `{"payload":{"url":"http://[::ffff:169.254.169.254]/"}}`},
		{`{"name":"a","type":"ping","delay":"1m","payload":null}`, `{"payload":null}`},
		{`{"name":"a","type":"ping","delay":"1m",` + ping + `,"timeout":"soon","max_retries":-1}`, `{"timeout":"1000h","max_retries":1000000}`},
		{`{"name":"a","type":"ping","schedule":{"cron":"@daily","start_at":"2030-02-01T00:00:00Z","end_at":"2030-01-01T00:00:00Z"},` + ping + `}`, `{"schedule":{"rrule":"DTSTART:20300101T000000Z\nRRULE:FREQ=DAILY;COUNT=3"}}`},
		{`{"name":"a","type":"ping","schedule":{"cron":"@daily","timezone":"Nowhere/City"},` + ping + `}`, `{"schedule":{"every":"fortnight","on":"someday"}}`},
		{`{"name":"a","type":"ping","schedule":{},` + ping + `}`, `{"schedule":null}`},
		// Refused by decodeJSON: unknown fields, wrong types, bad times.
		{`{"name":"a","nmae":"typo"}`, `{"status":"completed"}`},
		{`{"schedule":{"cron":"@daily","tz":"UTC"}}`, `{"schedule":{"dst":{"gap":"shift","extra":1}}}`},
		{`{"name":1,"type":["ping"],"priority":"high","max_retries":1.5}`, `{"priority":1e400,"max_retries":-0}`},
		{`{"priority":99999999999999999999999999}`, `{"priority":-9223372036854775809}`},
		{`{"schedule":{"count":1e3,"misfire_max":"3","on":{"x":1}}}`, `{"schedule":[]}`},
		{`{"run_at":"2030-01-02T15:04:05"}`, `{"run_at":12}`},
		{`{"run_at":"soon"}`, `{"schedule":{"start_at":"2030-13-01T00:00:00Z"}}`},
		{`{"run_at":"10000-01-01T00:00:00Z"}`, `{"run_at":"2030-01-01T24:00:00Z"}`},
		{`{"run_at":null,"schedule":null,"payload":{}}`, `{"name":null}`},
		{`{"Name":"case","TYPE":"ping","Delay":"1m",` + ping + `}`, `{"NAME":"x","Schedule":{"CRON":"@daily"}}`},
		{`{"owner":"00000000-0000-0000-0000-000000000007","name":"a","type":"ping","delay":"1m",` + ping + `}`, `{"owner":"x"}`},
		{`{"owner":7,"schedule":{"cron":"@daily","start_at":"x"}}`, `{"schedule":{"start_at":"2030-01-01"}}`},
		{`{"name":"a"} {}`, `{"name":"a"}]`},
		{`{"name": "x", `, `["x"]`},
		{``, `null`},
		{`"just a string"`, `42`},
		{"{\"name\":\"\xff\xfe\"}", "{\"name\":\"\\ud800\"}"},
		{`{"name":"a\u0000b","type":"ping","delay":"1m",` + ping + `}`, `{"payload":{"url":"https://example.com/","expect_status":"2xx\u0000"}}`},
		{`{"name":"a","type":"webhook","delay":"1m","payload":{"url":"https://example.com/","headers":{"X-A\u0000":"v"},"body":{"k":["\ud83d\ude00","\udc00"]}}}`, `{"payload":{"url":"https://example.com/","body":"\u0000"}}`},
		{`{"a":` + strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000) + `}`, `{"payload":` + strings.Repeat(`{"a":`, 1000) + `1` + strings.Repeat(`}`, 1000) + `}`},
		// Over the cap.
		{`{"name":"` + strings.Repeat("a", fuzzBodyCap) + `"}`, `{"payload":{"body":"` + strings.Repeat("b", fuzzBodyCap) + `"}}`},
	} {
		f.Add([]byte(seed.spec), []byte(seed.patch), false, byte(0))
		f.Add([]byte(seed.spec), []byte(seed.patch), true, byte(1<<7|1))
		f.Add([]byte(seed.spec), []byte(seed.patch), false, byte(2))
	}
	now := time.Date(2030, 1, 15, 14, 0, 0, 0, time.UTC)
	owner := [16]byte{15: 7}
	e := echo.New()
	s := &Server{maxBody: fuzzBodyCap}
	f.Fuzz(func(t *testing.T, specBody, patchBody []byte, started bool, state byte) {
		// The high bit of state drops the declared length, so the cap is
		// met while reading rather than up front.
		chunked := state&(1<<7) != 0
		status := fuzzStatuses[int(state&^(1<<7))%len(fuzzStatuses)]

		spec, specErr := decodeJobBody(s, e, http.MethodPost, specBody, chunked, jobspec.Create)
		checkDecodeError(t, specErr)
		patch, patchErr := decodeJobBody(s, e, http.MethodPatch, patchBody, chunked, jobspec.Patch)
		checkDecodeError(t, patchErr)
		// Each body is also decoded as the other kind, and as a replace, so
		// every shape sees every input.
		_, err := decodeJobBody(s, e, http.MethodPatch, specBody, chunked, jobspec.Patch)
		checkDecodeError(t, err)
		_, err = decodeJobBody(s, e, http.MethodPost, patchBody, chunked, jobspec.Create)
		checkDecodeError(t, err)
		_, err = decodeJobBody(s, e, http.MethodPut, specBody, chunked, jobspec.Replace)
		checkDecodeError(t, err)
		if specErr != nil {
			return
		}

		j, err := spec.Build(nil, owner, now, jobspec.DefaultLimits)
		if err != nil {
			checkDomainError(t, "Build", err, err)
			if j != nil {
				t.Fatalf("Build returned a job with error %v", err)
			}
			return
		}
		checkJob(t, "Build", j)
		if patchErr != nil {
			return
		}

		j.Status = status
		change, err := patch.Prepare(nil, j, now, jobspec.DefaultLimits)
		if err == nil {
			err = change.Apply(j, started)
		}
		if err != nil {
			// The store wraps what the edit returned; editError maps both.
			checkDomainError(t, "Apply", err, editError(fmt.Errorf("update job %s: %w", j.ID, err), err))
			return
		}
		if status != job.StatusScheduled && status != job.StatusPaused {
			t.Fatalf("Apply edited a %s job", status)
		}
		checkJob(t, "Apply", j)
	})
}

// decodeJobBody runs body through limitBody and decodeJob, as a request
// to the API would.
func decodeJobBody(s *Server, e *echo.Echo, method string, body []byte, chunked bool, mode jobspec.Mode) (*jobspec.Request, error) {
	req := httptest.NewRequest(method, "/api/v1/jobs", bytes.NewReader(body))
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	if chunked {
		req.ContentLength = -1
	}
	c := e.NewContext(req, httptest.NewRecorder())
	var out *jobspec.Request
	err := s.limitBody(func(c *echo.Context) error {
		r, _, err := s.decodeJob(c, mode)
		out = r
		return err
	})(c)
	return out, err
}

// checkDecodeError fails unless err is nil, a *job.FieldError (a 400), or
// a 400 "invalid" or a 413 "too_large" *apierr.Error.
func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var fe *job.FieldError
	if errors.As(err, &fe) {
		if status, _ := toResponse(err); status != http.StatusBadRequest {
			t.Fatalf("decode error %v maps to %d, not 400", err, status)
		}
		return
	}
	var ae *apierr.Error
	if !errors.As(err, &ae) {
		t.Fatalf("decode error %v (%T) is not an *apierr.Error", err, err)
	}
	switch {
	case ae.Status == http.StatusBadRequest && ae.Detail.Code == apierr.CodeInvalid:
	case ae.Status == http.StatusRequestEntityTooLarge && ae.Detail.Code == apierr.CodeTooLarge:
	default:
		t.Fatalf("decode error %v has status %d and code %q", err, ae.Status, ae.Detail.Code)
	}
	if status, _ := toResponse(err); status != ae.Status {
		t.Fatalf("decode error %v maps to %d, not its own %d", err, status, ae.Status)
	}
}

// checkDomainError fails unless err, from Build or Apply, is a validation
// error or a conflict, and answered (what the handler returns for it) maps
// to a 4xx.
func checkDomainError(t *testing.T, op string, err, answered error) {
	t.Helper()
	var fe *job.FieldError
	if !errors.As(err, &fe) && !errors.Is(err, job.ErrInvalid) && !errors.Is(err, job.ErrConflict) {
		t.Fatalf("%s error %v (%T) is neither a *FieldError nor ErrInvalid nor ErrConflict", op, err, err)
	}
	if status, detail := toResponse(answered); status < 400 || status >= 500 {
		t.Fatalf("%s error %v is answered %d %+v", op, err, status, detail)
	}
}

// checkJob fails unless j is what the store can hold and the scheduler can
// run: named, with a valid payload, due, and with a schedule that compiles
// again from its stored form.
func checkJob(t *testing.T, op string, j *job.Job) {
	t.Helper()
	if j.Name == "" || !json.Valid(j.Payload) {
		t.Fatalf("%s accepted an invalid job: %+v", op, j)
	}
	// What Postgres would refuse (and the API once answered 503 for) must
	// have been refused with a 400 before: text that is not UTF-8 or holds a
	// NUL, and a payload jsonb cannot take.
	if !textOK(j.Name) || !textOK(j.Timezone) || !textOK(string(j.Schedule)) || checkText(j.Payload) != nil {
		t.Fatalf("%s accepted a job Postgres cannot store: %q %q %q %q", op, j.Name, j.Timezone, j.Schedule, j.Payload)
	}
	if !j.Recurring() {
		if j.RunAt.IsZero() {
			t.Fatalf("%s accepted a one-off job without run_at: %+v", op, j)
		}
		return
	}
	if _, err := schedule.FromJSON(j.Schedule); err != nil {
		t.Fatalf("%s accepted a schedule %s that does not compile again: %v", op, j.Schedule, err)
	}
}
