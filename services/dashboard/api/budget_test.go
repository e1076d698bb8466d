package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// expensiveRules are the rules the isolation issue found holding a core for
// seconds to minutes: their FREQ periods never produce an occurrence.
var expensiveRules = []string{
	"FREQ=SECONDLY;BYSETPOS=2",
	"FREQ=MINUTELY;INTERVAL=10;BYSETPOS=2",
	"FREQ=HOURLY;BYSETPOS=2",
}

func TestExpensiveRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recurring := func(rule string) map[string]any {
		return map[string]any{"name": "costly", "type": "ping", "schedule": map[string]any{"rrule": rule},
			"payload": map[string]any{"url": "https://example.com/health"}}
	}
	refused := func(t *testing.T, rec *httptest.ResponseRecorder, field string) {
		t.Helper()
		e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, field, e.Field)
		require.Contains(t, e.Message, "too expensive to evaluate")
	}
	for _, rule := range expensiveRules {
		t.Run("PreviewRefuses/"+rule, func(t *testing.T) {
			t.Parallel()
			refused(t, b.do(t, http.MethodPost, "/api/v1/schedules/preview",
				map[string]any{"schedule": map[string]any{"rrule": rule}, "n": 1}), "schedule.rrule")
		})
		t.Run("CreateRefuses/"+rule, func(t *testing.T) {
			t.Parallel()
			refused(t, b.do(t, http.MethodPost, "/api/v1/jobs", recurring(rule)), "schedule.rrule")
		})
		t.Run("PatchRefuses/"+rule, func(t *testing.T) {
			t.Parallel()
			j := b.create(t, "to-patch", b.now.Add(time.Hour))
			refused(t, b.do(t, http.MethodPatch, "/api/v1/jobs/"+j.ID.String(),
				map[string]any{"schedule": map[string]any{"rrule": rule}}), "schedule.rrule")
			got := decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil))
			require.Equal(t, j.UpdatedAt, got.UpdatedAt, "a refused edit changes nothing")
			require.Nil(t, got.Schedule)
		})
		t.Run("BatchNamesTheJob/"+rule, func(t *testing.T) {
			t.Parallel()
			ok := spec("fine", b.now.Add(time.Hour))
			rec := b.do(t, http.MethodPost, "/api/v1/jobs:batch", map[string]any{"jobs": []any{ok, recurring(rule), ok}})
			require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
			body := decode[api.BatchErrorBody](t, rec)
			require.Len(t, body.Errors, 1)
			require.Equal(t, 1, body.Errors[0].Index)
			require.Equal(t, "schedule.rrule", body.Errors[0].Field)
			require.Contains(t, body.Errors[0].Message, "too expensive to evaluate")
		})
	}
	t.Run("ARuleNeedingLittleWorkStillPasses", func(t *testing.T) {
		t.Parallel()
		rec := b.do(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{
			"schedule": map[string]any{"rrule": "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", "timezone": "Europe/Berlin"}, "n": 100})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	})
}

// BenchmarkExpensiveRulesIsolation sends, per iteration, a hundred previews
// of expensive rules at once as one user while another user reads one of
// their jobs over and over, and reports the reader's latency (p50, p99,
// max) and the CPU the dashboard spent per refused rule. Each rule is
// refused within its budget, and one user's schedule work waits its turn
// (one at a time per user), so the reader is not slowed by the flood.
func BenchmarkExpensiveRulesIsolation(b *testing.B) {
	st := testenv.Store(b)
	rdb, prefix := testenv.Redis(b)
	quotas := api.Quotas{} // no rate limits: the flood must reach the rules
	h := api.New(api.Deps{Store: st, Queue: queue.New(rdb, prefix, 1), Redis: rdb, Logger: zap.NewNop(),
		AdminToken: token, Limits: jobspec.DefaultLimits, Quotas: &quotas}).Handler()
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	call := func(method, path, auth, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	admin := "Bearer " + token
	newUser := func(name string) string {
		_, body := call(http.MethodPost, "/api/v1/users", admin, `{"name":"`+name+`","role":"user"}`)
		id := strings.Split(strings.Split(body, `"id":"`)[1], `"`)[0]
		_, body = call(http.MethodPost, "/api/v1/users/"+id+"/keys", admin, `{}`)
		return "Bearer " + strings.Split(strings.Split(body, `"key":"`)[1], `"`)[0]
	}
	flooder, reader := newUser("flooder"), newUser("reader")
	code, body := call(http.MethodPost, "/api/v1/jobs", reader,
		`{"name":"mine","type":"ping","delay":"1h","payload":{"url":"https://example.com/"}}`)
	if code != http.StatusCreated {
		b.Fatalf("create: %d %s", code, body)
	}
	readPath := "/api/v1/jobs/" + strings.Split(strings.Split(body, `"id":"`)[1], `"`)[0]

	var lat []time.Duration
	var refusedCPU time.Duration
	refused := 0
	for b.Loop() {
		var wg sync.WaitGroup
		done := make(chan struct{})
		cpu0 := processCPU()
		for i := range 100 {
			wg.Go(func() {
				rule := expensiveRules[i%len(expensiveRules)]
				code, _ := call(http.MethodPost, "/api/v1/schedules/preview", flooder,
					`{"schedule":{"rrule":"`+rule+`"},"n":1}`)
				if code != http.StatusBadRequest {
					b.Errorf("rule %s answered %d", rule, code)
				}
			})
		}
		go func() { wg.Wait(); close(done) }()
		for reading := true; reading; {
			select {
			case <-done:
				reading = false
			default:
				began := time.Now()
				if code, _ := call(http.MethodGet, readPath, reader, ""); code != http.StatusOK {
					b.Fatalf("read answered %d", code)
				}
				lat = append(lat, time.Since(began))
			}
		}
		refusedCPU += processCPU() - cpu0
		refused += 100
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "read_p50_ms")
	b.ReportMetric(q(0.99), "read_p99_ms")
	b.ReportMetric(q(1), "read_max_ms")
	b.ReportMetric(float64(refusedCPU.Microseconds())/1000/float64(refused), "cpu_ms/refused_rule")
}

// processCPU is the CPU time this process has used: the in-process server's
// and the benchmark's own clients'.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
