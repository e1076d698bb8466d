package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// lockedBuffer is a bytes.Buffer the server's goroutines and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// listen prints what a delivery carries, tock's headers and the body, and
// answers with the status asked for.
func TestListenPrintsEachDelivery(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	a := &app{out: out}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.listen(ctx, ln, http.StatusAccepted) }()

	req, err := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/hook?x=1", strings.NewReader(`{"seq":7}`))
	require.NoError(t, err)
	req.Header.Set("X-Tock-Job-Id", "01a2205e-07ff-782c-95db-d02187e86e51")
	req.Header.Set("Idempotency-Key", "01a2205e-07ff-782c-95db-d02187e86e51:1764300000000")
	req.Header.Set("Authorization", "Bearer not-for-the-terminal")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusAccepted, res.StatusCode)

	got := out.String()
	require.Contains(t, got, "listening on http://"+ln.Addr().String())
	require.Contains(t, got, "POST /hook?x=1")
	require.Contains(t, got, "X-Tock-Job-Id: 01a2205e-07ff-782c-95db-d02187e86e51")
	require.Contains(t, got, "Idempotency-Key: 01a2205e-07ff-782c-95db-d02187e86e51:1764300000000")
	require.Contains(t, got, `{"seq":7}`)
	require.NotContains(t, got, "not-for-the-terminal", "only tock's headers are printed")

	cancel()
	require.NoError(t, <-done)
}

func TestListenRefusesABadStatus(t *testing.T) {
	t.Parallel()
	_, errOut, code := invoke(t, nil, "", "listen", "--status", "99")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--status must be an HTTP status from 200 to 599")
}
