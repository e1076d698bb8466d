package jobspec_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
)

var (
	now   = time.Date(2030, 1, 15, 14, 0, 0, 0, time.UTC)
	owner = [16]byte{15: 7}
)

func ptr[T any](v T) *T { return &v }

// spec is a create's body, field by field.
type spec map[string]any

// validSpec is a webhook spec that Build accepts; cases change one thing.
func validSpec() spec {
	return spec{
		"name":    "nightly report",
		"type":    jobtype.TypeWebhook,
		"run_at":  now.Add(time.Hour),
		"payload": json.RawMessage(`{"url":"https://example.com/hook","method":"POST","headers":{"X-Token":"abc"},"body":{"a":1}}`),
	}
}

// Build reads s as the body of a create and builds its job.
func (s spec) Build(owner [16]byte, now time.Time, lim jobspec.Limits) (*job.Job, error) {
	r, err := jobspec.NewRequest(jobspec.Create, s)
	if err != nil {
		return nil, err
	}
	return r.Build(nil, owner, now, lim)
}

// patch applies the patch body p to j, as PATCH does.
func patch(j *job.Job, p spec) error {
	r, err := jobspec.NewRequest(jobspec.Patch, p)
	if err != nil {
		return err
	}
	c, err := r.Prepare(nil, j, now, jobspec.DefaultLimits)
	if err != nil {
		return err
	}
	return c.Apply(j, false)
}

func TestSpecBuild(t *testing.T) {
	t.Parallel()

	t.Run("AcceptsWebhook", func(t *testing.T) {
		t.Parallel()
		s := validSpec()
		s["name"] = "  nightly report  "
		s["priority"], s["max_retries"], s["timeout"] = -12, 0, "2m"
		s["run_at"] = time.Date(2030, 1, 15, 16, 30, 0, 123456789, time.FixedZone("CET", 3600))
		s["payload"] = json.RawMessage("{\n  \"url\": \"https://example.com/hook\",\n  \"method\": \"post\",\n  \"body\": {\"a\": [1, 2]}\n}")

		j, err := s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err)
		require.NotZero(t, j.ID)
		require.Equal(t, [16]byte(j.Owner), owner)
		require.Equal(t, "nightly report", j.Name, "the name is trimmed")
		require.Equal(t, jobtype.TypeWebhook, j.Type)
		require.Equal(t, job.StatusScheduled, j.Status)
		require.Equal(t, -12, j.Priority)
		require.Equal(t, 0, j.MaxRetries, "an explicit zero is kept, not defaulted")
		require.Equal(t, 2*time.Minute, j.Timeout)
		wantRun := time.Date(2030, 1, 15, 15, 30, 0, 123000000, time.UTC)
		require.Equal(t, wantRun, j.RunAt, "run_at in UTC, truncated to the millisecond")
		require.Equal(t, j.RunAt, j.DueAt, "a new job is due at its run time")
		require.Equal(t, `{"url":"https://example.com/hook","method":"post","body":{"a":[1,2]}}`, string(j.Payload), "payload compacted")
		require.Equal(t, now, j.CreatedAt)
		require.Equal(t, now, j.UpdatedAt)
	})

	t.Run("AcceptsRetentionAndHistory", func(t *testing.T) {
		t.Parallel()
		s := validSpec()
		j, err := s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err)
		require.Zero(t, j.Retention, "the operator's default")
		require.Equal(t, job.HistoryAll, j.History)
		s["retention"], s["history"] = "90d", "failures"
		j, err = s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err)
		require.Equal(t, 90*24*time.Hour, j.Retention)
		require.Equal(t, job.HistoryFailures, j.History)
		labels := map[string]string{"customer": "1234", "a.b_c-9": strings.Repeat("é", 200), "empty": ""}
		s["labels"] = labels
		j, err = s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err)
		require.Equal(t, labels, j.Labels)

		// A patch changes them, and an empty retention returns to the default.
		require.NoError(t, patch(j, spec{"retention": "7d", "history": "all"}))
		require.Equal(t, 7*24*time.Hour, j.Retention)
		require.Equal(t, job.HistoryAll, j.History)
		require.NoError(t, patch(j, spec{"name": "kept"}))
		require.Equal(t, 7*24*time.Hour, j.Retention, "a patch that does not name it keeps it")
		require.NoError(t, patch(j, spec{"retention": ""}))
		require.Zero(t, j.Retention)
		err = patch(j, spec{"retention": "0s"})
		var fe *job.FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "retention", fe.Field)
	})

	t.Run("AcceptsPing", func(t *testing.T) {
		t.Parallel()
		s := spec{"name": "up?", "type": jobtype.TypePing, "run_at": now, "payload": json.RawMessage(`{"url":"http://example.com:8080/health"}`)}
		j, err := s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err, "run_at equal to now is not in the past")
		require.Equal(t, jobtype.TypePing, j.Type)
	})

	t.Run("AppliesDefaults", func(t *testing.T) {
		t.Parallel()
		s := validSpec()
		j, err := s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err)
		require.Equal(t, job.DefaultMaxRetries, j.MaxRetries)
		require.Equal(t, 3, j.MaxRetries)
		require.Equal(t, job.DefaultTimeout, j.Timeout)
		require.Equal(t, 30*time.Second, j.Timeout)
		require.Zero(t, j.Priority)
	})

	t.Run("AcceptsLimits", func(t *testing.T) {
		t.Parallel()
		for _, mod := range []func(spec){
			func(s spec) { s["priority"] = job.MinPriority },
			func(s spec) { s["priority"] = job.MaxPriority },
			func(s spec) { s["max_retries"] = job.MaxRetriesLimit },
			func(s spec) { s["timeout"] = "100ms" },
			func(s spec) { s["timeout"] = "1h" },
			func(s spec) { s["name"] = strings.Repeat("n", job.MaxNameLen) },
		} {
			s := validSpec()
			mod(s)
			_, err := s.Build(owner, now, jobspec.DefaultLimits)
			require.NoError(t, err, "%+v", s)
		}
	})

	t.Run("RejectsInvalidInput", func(t *testing.T) {
		t.Parallel()
		webhook := func(p string) func(spec) {
			return func(s spec) { s["payload"] = json.RawMessage(p) }
		}
		ping := func(p string) func(spec) {
			return func(s spec) { s["type"], s["payload"] = jobtype.TypePing, json.RawMessage(p) }
		}
		tests := []struct {
			name  string
			mod   func(spec)
			lim   *jobspec.Limits
			field string
		}{
			{"NameMissing", func(s spec) { s["name"] = "" }, nil, "name"},
			{"NameBlank", func(s spec) { s["name"] = " \t " }, nil, "name"},
			{"NameTooLong", func(s spec) { s["name"] = strings.Repeat("n", job.MaxNameLen+1) }, nil, "name"},
			{"TypeMissing", func(s spec) { s["type"] = "" }, nil, "type"},
			{"TypeUnknown", func(s spec) { s["type"] = "sms" }, nil, "type"},
			{"SlackWithWebhookPayload", func(s spec) { s["type"] = jobtype.TypeSlack }, nil, "payload"},
			{"EmailWithWebhookPayload", func(s spec) { s["type"] = jobtype.TypeEmail }, nil, "payload"},
			{"RunAtMissing", func(s spec) { delete(s, "run_at") }, nil, "run_at"},
			{"RunAtPast", func(s spec) { s["run_at"] = now.Add(-time.Millisecond) }, nil, "run_at"},
			{"PayloadMissing", func(s spec) { delete(s, "payload") }, nil, "payload"},
			{"PayloadNull", webhook("null"), nil, "payload"},
			{"PayloadTooBig", webhook(`{"url":"https://example.com/` + strings.Repeat("a", 64) + `"}`), &jobspec.Limits{MaxPayloadBytes: 64}, "payload"},
			{"PayloadUnknownField", webhook(`{"url":"https://example.com","urll":"x"}`), nil, "payload"},
			{"PayloadWrongShape", webhook(`["https://example.com"]`), nil, "payload"},
			{"PayloadWrongFieldType", webhook(`{"url":42}`), nil, "payload"},
			{"PingUnknownField", ping(`{"url":"https://example.com","method":"GET"}`), nil, "payload"},
			{"URLMissing", webhook(`{"method":"GET"}`), nil, "payload.url"},
			{"URLNotHTTP", webhook(`{"url":"ftp://example.com/file"}`), nil, "payload.url"},
			{"URLRelative", webhook(`{"url":"/hook"}`), nil, "payload.url"},
			{"URLNoHost", webhook(`{"url":"http:///hook"}`), nil, "payload.url"},
			{"URLUnparsable", webhook(`{"url":"http://[::1"}`), nil, "payload.url"},
			{"URLWithCredentials", webhook(`{"url":"https://user:secret@example.com/hook"}`), nil, "payload.url"},
			{"PingURLNotHTTP", ping(`{"url":"file:///etc/passwd"}`), nil, "payload.url"},
			{"PingURLNoHost", ping(`{"url":"https://"}`), nil, "payload.url"},
			{"MethodInvalid", webhook(`{"url":"https://example.com","method":"TRACE"}`), nil, "payload.method"},
			{"HeaderValueCR", webhook(`{"url":"https://example.com","headers":{"X-A":"a\rb"}}`), nil, "payload.headers"},
			{"HeaderValueLF", webhook(`{"url":"https://example.com","headers":{"X-A":"a\nInjected: 1"}}`), nil, "payload.headers"},
			{"HeaderNameCRLF", webhook(`{"url":"https://example.com","headers":{"X-A\r\nB":"v"}}`), nil, "payload.headers"},
			{"HeaderNameColon", webhook(`{"url":"https://example.com","headers":{"X-A:":"v"}}`), nil, "payload.headers"},
			{"HeaderNameEmpty", webhook(`{"url":"https://example.com","headers":{"":"v"}}`), nil, "payload.headers"},
			{"PriorityTooLow", func(s spec) { s["priority"] = job.MinPriority - 1 }, nil, "priority"},
			{"PriorityTooHigh", func(s spec) { s["priority"] = job.MaxPriority + 1 }, nil, "priority"},
			{"MaxRetriesNegative", func(s spec) { s["max_retries"] = -1 }, nil, "max_retries"},
			{"MaxRetriesTooHigh", func(s spec) { s["max_retries"] = job.MaxRetriesLimit + 1 }, nil, "max_retries"},
			{"TimeoutUnparsable", func(s spec) { s["timeout"] = "30" }, nil, "timeout"},
			{"TimeoutTooShort", func(s spec) { s["timeout"] = "99ms" }, nil, "timeout"},
			{"TimeoutTooLong", func(s spec) { s["timeout"] = "1h0m1s" }, nil, "timeout"},
			{"TimeoutNegative", func(s spec) { s["timeout"] = "-5s" }, nil, "timeout"},
			{"RetentionUnparsable", func(s spec) { s["retention"] = "a month" }, nil, "retention"},
			{"RetentionTooShort", func(s spec) { s["retention"] = "500ms" }, nil, "retention"},
			{"RetentionTooLong", func(s spec) { s["retention"] = "3661d" }, nil, "retention"},
			{"RetentionNegative", func(s spec) { s["retention"] = "-1h" }, nil, "retention"},
			{"HistoryUnknown", func(s spec) { s["history"] = "successes" }, nil, "history"},
			{"LabelKeyUpper", func(s spec) { s["labels"] = map[string]string{"Customer": "1"} }, nil, "labels"},
			{"LabelKeyEmpty", func(s spec) { s["labels"] = map[string]string{"": "1"} }, nil, "labels"},
			{"LabelKeyTooLong", func(s spec) { s["labels"] = map[string]string{strings.Repeat("k", 64): "1"} }, nil, "labels"},
			{"LabelValueTooLong", func(s spec) { s["labels"] = map[string]string{"k": strings.Repeat("é", 201)} }, nil, "labels.k"},
			{"LabelValueControl", func(s spec) { s["labels"] = map[string]string{"k": "a\tb"} }, nil, "labels.k"},
			{"TooManyLabels", func(s spec) {
				labels := map[string]string{}
				for i := range 21 {
					labels[strconv.Itoa(i)] = "v"
				}
				s["labels"] = labels
			}, nil, "labels"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				s := validSpec()
				tt.mod(s)
				lim := jobspec.DefaultLimits
				if tt.lim != nil {
					lim = *tt.lim
				}
				j, err := s.Build(owner, now, lim)
				require.Error(t, err)
				require.Nil(t, j)
				require.ErrorIs(t, err, job.ErrInvalid)
				var fe *job.FieldError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, tt.field, fe.Field, "error: %v", err)
				require.NotEmpty(t, fe.Message)
				require.True(t, strings.HasPrefix(err.Error(), tt.field+": "), "error %q names its field", err)
			})
		}
	})

	t.Run("ZeroLimitsDoNotCapPayload", func(t *testing.T) {
		t.Parallel()
		s := validSpec()
		s["payload"] = json.RawMessage(`{"url":"https://example.com","body":"` + strings.Repeat("x", 1<<17) + `"}`)
		_, err := s.Build(owner, now, jobspec.Limits{})
		require.NoError(t, err)
		_, err = s.Build(owner, now, jobspec.DefaultLimits)
		require.ErrorIs(t, err, job.ErrInvalid)
	})
}

func TestFieldError(t *testing.T) {
	t.Parallel()

	t.Run("MatchesOnlyErrInvalid", func(t *testing.T) {
		t.Parallel()
		var err error = &job.FieldError{Field: "name", Message: "is required"}
		require.ErrorIs(t, err, job.ErrInvalid)
		require.NotErrorIs(t, err, job.ErrNotFound)
		require.NotErrorIs(t, err, job.ErrConflict)
		require.Equal(t, "name: is required", err.Error())
		wrapped := errors.Join(errors.New("create job"), err)
		require.ErrorIs(t, wrapped, job.ErrInvalid)
	})
}

// FuzzSpecBuild decodes arbitrary JSON as a create: Build must never panic, and
// every error it returns must be a *FieldError.
func FuzzSpecBuild(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a","type":"webhook","run_at":"2030-01-15T15:00:00Z","payload":{"url":"https://example.com"}}`,
		`{"name":"a","type":"ping","run_at":"2030-01-15T15:00:00+02:00","payload":{"url":"http://h"},"priority":5,"max_retries":0,"timeout":"1s"}`,
		`{"name":"a","type":"webhook","run_at":"2030-01-15T15:00:00Z","payload":{"url":"https://u:p@h","method":"x","headers":{"a":"b\r"}}}`,
		`{"name":"","type":"slack","payload":null}`,
		`{"type":"webhook","payload":[1,2,3],"timeout":"-1h"}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := jobspec.Decode(data, jobspec.Create)
		if err != nil {
			var fe *job.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("decode error %v (%T) is not a *FieldError", err, err)
			}
			return
		}
		j, err := r.Build(nil, owner, now, jobspec.Limits{MaxPayloadBytes: 4096})
		if err != nil {
			var fe *job.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("error %v (%T) is not a *FieldError with a field", err, err)
			}
			if !errors.Is(err, job.ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			if j != nil {
				t.Fatalf("a job came back with error %v", err)
			}
			return
		}
		if j.Name == "" || j.RunAt.Before(now) || !json.Valid(j.Payload) {
			t.Fatalf("accepted an invalid job: %+v", j)
		}
	})
}
