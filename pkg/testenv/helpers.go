package testenv

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/testsignal"
)

// Job returns a scheduled one-off ping job of owner, due at runAt (to the
// millisecond) and not claimed yet (DueAt = RunAt), as the dashboard stores
// a job beyond the load horizon: 3 retries, a 5 s timeout, a ping of
// example.com, created now. mods adjust it.
func Job(owner uuid.UUID, runAt time.Time, mods ...func(*job.Job)) *job.Job {
	runAt = runAt.UTC().Truncate(time.Millisecond)
	created := time.Now().UTC()
	j := &job.Job{
		ID: job.NewID(), Owner: owner, Name: "ping", Type: jobtype.TypePing, Status: job.StatusScheduled,
		MaxRetries: 3, Timeout: 5 * time.Second, Timezone: "UTC", History: job.HistoryAll, Payload: json.RawMessage(`{"url":"http://example.com"}`),
		RunAt: runAt, DueAt: runAt, CreatedAt: created, UpdatedAt: created,
	}
	for _, mod := range mods {
		mod(j)
	}
	return j
}

// GoRun runs fn on its own goroutine until cancel is called or the test
// ends; done is closed when fn has returned. cancel does not wait (a test
// may act while fn winds down; Returned waits). When the test ends, GoRun
// cancels fn and waits up to 15 s for it, failing the test if it hangs.
func GoRun(t testing.TB, fn func(ctx context.Context)) (cancel func(), done <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		fn(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ch:
		case <-time.After(15 * time.Second):
			t.Errorf("goroutine did not return within 15s of its context ending")
		}
	})
	return cancel, ch
}

// Returned waits for done, failing the test after timeout.
func Returned(t testing.TB, done <-chan struct{}, timeout time.Duration) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("did not return within %s", timeout)
	}
}

// WaitUntil polls cond every 10 ms until it holds, failing the test with msg
// at the deadline: for a condition nothing can signal. cond runs on the test
// goroutine, so it may use require. An arg of type func() string is called
// at the deadline, to report the state then.
func WaitUntil(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			timedOut(t, timeout, msg, args)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitFor is WaitUntil for a component that can tell the test: cond is
// checked at once and each time sig is raised, never on an interval.
func WaitFor(t testing.TB, sig *testsignal.Signal, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	if !sig.WaitFor(timeout, cond) {
		timedOut(t, timeout, msg, args)
	}
}

// timedOut fails the test with msg, calling the args that are func() string
// to say what the state was at the end.
func timedOut(t testing.TB, timeout time.Duration, msg string, args []any) {
	t.Helper()
	for i, a := range args {
		if f, ok := a.(func() string); ok {
			args[i] = f()
		}
	}
	t.Fatalf("after %s: "+msg, append([]any{timeout}, args...)...)
}
