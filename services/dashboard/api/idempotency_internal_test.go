package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// TestKeptBody: what an Idempotency-Key keeps of an answer. Only final
// answers are kept; an answer marked as holding a secret keeps its redacted
// body, and nothing at all if it ended in another status than the one the
// redacted body stands for.
func TestKeptBody(t *testing.T) {
	t.Parallel()
	sent, redactedBody := []byte(`{"secret":"s3cret"}`), []byte(`{"secret":"secret:sha256:00"}`)
	tests := []struct {
		name     string
		status   int
		marked   int // the status of the redacted body given; 0 for none
		wantKept bool
		want     []byte
	}{
		{"CreatedIsKept", http.StatusCreated, 0, true, sent},
		{"RefusalIsKept", http.StatusBadRequest, 0, true, sent},
		{"RateLimitIsNotKept", http.StatusTooManyRequests, 0, false, nil},
		{"ServerErrorIsNotKept", http.StatusServiceUnavailable, 0, false, nil},
		{"SecretIsKeptRedacted", http.StatusOK, http.StatusOK, true, redactedBody},
		{"SecretThenAnotherAnswerKeepsNothing", http.StatusBadRequest, http.StatusOK, false, nil},
		{"SecretThenServerErrorKeepsNothing", http.StatusInternalServerError, http.StatusOK, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := echo.NewContext(httptest.NewRequest(http.MethodPost, "/", nil), httptest.NewRecorder())
			if tt.marked != 0 {
				keepRedacted(c, tt.marked, redactedBody)
			}
			got, kept := keptBody(c, tt.status, sent)
			require.Equal(t, tt.wantKept, kept)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestSecretFingerprint: a fingerprint names its secret without holding it.
func TestSecretFingerprint(t *testing.T) {
	t.Parallel()
	fp := secretFingerprint("0123456789abcdef")
	require.Regexp(t, `^secret:sha256:[0-9a-f]{32}$`, fp)
	require.NotContains(t, fp, "0123456789abcdef")
	require.Equal(t, fp, secretFingerprint("0123456789abcdef"), "the same secret, the same fingerprint")
	require.NotEqual(t, fp, secretFingerprint("0123456789abcdeg"))
}

// TestSettleKeyThroughAnOutage: a key whose settle fails (Postgres went
// away during the request) is settled again in the background until it
// takes, so that repeats are not refused with a 409 for two minutes.
func TestSettleKeyThroughAnOutage(t *testing.T) {
	t.Parallel()
	s := &Server{log: zap.NewNop(), clock: time.Now, settling: make(chan struct{}, 1)}
	var calls atomic.Int32
	done := make(chan struct{})
	s.settleKey(t.Context(), func(context.Context) error {
		if calls.Add(1) < 3 {
			return errors.New("connection refused")
		}
		close(done)
		return nil
	})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("settled after %d tries, want 3", calls.Load())
	}
	require.Eventually(t, func() bool { return len(s.settling) == 0 }, 5*time.Second, 10*time.Millisecond, "the slot is given back")

	// With every slot taken, a failed settle is left to be abandoned, and
	// tried once only.
	s.settling <- struct{}{}
	var once atomic.Int32
	s.settleKey(t.Context(), func(context.Context) error { once.Add(1); return errors.New("down") })
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, int32(1), once.Load())
}
