package api

import (
	"errors"
	"net/http"
	"testing"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// FuzzBulkRequest: any body of POST /api/v1/jobs:bulk is either a plan
// within the caps (a known action, ids or a filter, at most MaxBulkJobs
// distinct ids) or a 400 or 413, never a panic or another error.
func FuzzBulkRequest(f *testing.F) {
	for _, seed := range []string{
		`{"action":"retry","ids":["01a20df4-78f7-7cb7-9041-c2400621b1af"]}`,
		`{"action":"pause","filter":{"status":"scheduled","type":"webhook","label":["customer=1234","plan=pro"],"q":"nightly"}}`,
		`{"action":"cancel","filter":{"label":"a=b","owner":"01a20df4-78f7-7cb7-9041-c2400621b1af"},"dry_run":true}`,
		`{"action":"resume","filter":{"label":{"a":"b"}}}`,
		`{"action":"trigger","ids":[],"filter":{}}`,
		`{"action":"x"}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		plan, err := parseBulk(data)
		if err != nil {
			var ae *apierr.Error
			var fe *job.FieldError
			if !errors.As(err, &ae) && !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not the API's own", err, err)
			}
			if status, _ := toResponse(err); status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
				t.Fatalf("error %v is a %d, not a 400 or 413", err, status)
			}
			return
		}
		if (plan.ids == nil) == (plan.filter == nil) {
			t.Fatalf("plan has ids %v and filter %v", plan.ids, plan.filter)
		}
		if len(plan.ids) > MaxBulkJobs {
			t.Fatalf("%d ids accepted", len(plan.ids))
		}
		if plan.filter != nil && len(plan.filter.Labels) > 20 {
			t.Fatalf("%d label filters accepted", len(plan.filter.Labels))
		}
		seen := map[string]bool{}
		for _, id := range plan.ids {
			if seen[id.String()] {
				t.Fatalf("id %s twice", id)
			}
			seen[id.String()] = true
		}
	})
}

// FuzzDeadLetterRequest: any body of POST /api/v1/dead-letters:replay or
// :purge is either a plan within the caps (ids or a dead-letter search, at
// most MaxBulkJobs distinct ids) or a 400 or 413, never a panic or another
// error.
func FuzzDeadLetterRequest(f *testing.F) {
	for _, seed := range []string{
		`{"ids":["01a20df4-78f7-7cb7-9041-c2400621b1af"]}`,
		`{"filter":{"type":"webhook","job":"01a20df4-78f7-7cb7-9041-c2400621b1af","label":["customer=1234"],"since":"2026-01-01T00:00:00Z","until":"2026-02-01T00:00:00Z","q":"status 500"},"dry_run":true}`,
		`{"filter":{"label":"a=b","owner":"01a20df4-78f7-7cb7-9041-c2400621b1af"}}`,
		`{"filter":{"since":"2026-02-01T00:00:00Z","until":"2026-01-01T00:00:00Z"}}`,
		`{"ids":[],"filter":{}}`,
		`{"action":"replay"}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		plan, err := parseDead(data)
		if err != nil {
			var ae *apierr.Error
			var fe *job.FieldError
			if !errors.As(err, &ae) && !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not the API's own", err, err)
			}
			if status, _ := toResponse(err); status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
				t.Fatalf("error %v is a %d, not a 400 or 413", err, status)
			}
			return
		}
		if (plan.ids == nil) == (plan.search == nil) {
			t.Fatalf("plan has ids %v and search %v", plan.ids, plan.search)
		}
		if len(plan.ids) > MaxBulkJobs {
			t.Fatalf("%d ids accepted", len(plan.ids))
		}
		if s := plan.search; s != nil {
			if !s.Dead || s.Status != job.RunPermanentlyFailed {
				t.Fatalf("a filter that selects more than dead letters: %+v", s)
			}
			if len(s.Labels) > 20 {
				t.Fatalf("%d label filters accepted", len(s.Labels))
			}
			if !s.Since.IsZero() && !s.Until.IsZero() && !s.Until.After(s.Since) {
				t.Fatalf("an empty window accepted: %s to %s", s.Since, s.Until)
			}
		}
		seen := map[string]bool{}
		for _, id := range plan.ids {
			if seen[id.String()] {
				t.Fatalf("id %s twice", id)
			}
			seen[id.String()] = true
		}
	})
}
