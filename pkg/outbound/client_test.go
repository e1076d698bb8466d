package outbound_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tockhq/tock/pkg/outbound"
)

// goleak runs once after all tests: VerifyNone inside parallel tests would see
// the goroutines of the tests running beside them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is a loopback test server that counts the connections it accepts and
// the requests it serves.
type server struct {
	*httptest.Server
	conns    atomic.Int64
	requests atomic.Int64
}

// setup starts a server on 127.0.0.1 with handler h (200 "ok" if nil). Every
// client the test makes must be passed to closeIdle so no goroutine outlives it.
func setup(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	if h == nil {
		h = func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	}
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func client(t *testing.T, opts outbound.Options) *http.Client {
	t.Helper()
	c := outbound.NewClient(opts)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// get sends a GET and returns the status code, reading the body to its end so
// the connection can be reused.
func get(t *testing.T, c *http.Client, u string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	return strconv.Itoa(resp.StatusCode), nil
}

func TestClient(t *testing.T) {
	t.Parallel()

	t.Run("DeniesLoopbackBeforeConnecting", func(t *testing.T) {
		t.Parallel()
		s := setup(t, nil)
		_, err := get(t, client(t, outbound.Options{}), s.URL)
		require.ErrorIs(t, err, outbound.ErrDenied)
		var ue *url.Error
		require.ErrorAs(t, err, &ue)
		var oe *net.OpError
		require.ErrorAs(t, err, &oe)
		var de *outbound.DeniedError
		require.ErrorAs(t, err, &de)
		require.Equal(t, netip.MustParseAddr("127.0.0.1"), de.Addr)
		require.Contains(t, err.Error(), "127.0.0.1")
		require.Zero(t, s.requests.Load())
		require.Zero(t, s.conns.Load(), "the guard must refuse before the socket connects")
	})

	t.Run("DeniesNameResolvingToLoopback", func(t *testing.T) {
		t.Parallel()
		s := setup(t, nil)
		port := s.Listener.Addr().(*net.TCPAddr).Port
		_, err := get(t, client(t, outbound.Options{}), "http://localhost:"+strconv.Itoa(port)+"/")
		require.ErrorIs(t, err, outbound.ErrDenied)
		require.Zero(t, s.conns.Load())
	})

	t.Run("AllowPrivateConnects", func(t *testing.T) {
		t.Parallel()
		s := setup(t, nil)
		code, err := get(t, client(t, outbound.Options{AllowPrivate: true}), s.URL)
		require.NoError(t, err)
		require.Equal(t, "200", code)
		require.EqualValues(t, 1, s.requests.Load())
	})

	t.Run("AllowCIDRsConnect", func(t *testing.T) {
		t.Parallel()
		s := setup(t, nil)
		c := client(t, outbound.Options{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
		code, err := get(t, c, s.URL)
		require.NoError(t, err)
		require.Equal(t, "200", code)
	})

	t.Run("ReusesConnections", func(t *testing.T) {
		t.Parallel()
		s := setup(t, nil)
		c := client(t, outbound.Options{AllowPrivate: true})
		for range 20 {
			_, err := get(t, c, s.URL)
			require.NoError(t, err)
		}
		require.EqualValues(t, 20, s.requests.Load())
		require.EqualValues(t, 1, s.conns.Load())
	})

	t.Run("TransportIgnoresEnvironmentProxy", func(t *testing.T) {
		t.Parallel()
		tr, ok := outbound.NewClient(outbound.Options{}).Transport.(*http.Transport)
		require.True(t, ok)
		require.Nil(t, tr.Proxy)
		require.Equal(t, outbound.DefaultMaxIdleConnsPerHost, tr.MaxIdleConnsPerHost)
		require.Equal(t, 10*time.Second, tr.TLSHandshakeTimeout)
		require.Zero(t, outbound.NewClient(outbound.Options{}).Timeout)
	})
}

// redirector redirects /n to /n+1 forever, answering 200 at /stop.
func redirector(t *testing.T) *server {
	t.Helper()
	return setup(t, func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if err != nil {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Redirect(w, r, "/"+strconv.Itoa(n+1), http.StatusFound)
	})
}

func TestRedirects(t *testing.T) {
	t.Parallel()

	t.Run("StopsAfterMaxRedirects", func(t *testing.T) {
		t.Parallel()
		s := redirector(t)
		_, err := get(t, client(t, outbound.Options{AllowPrivate: true, MaxRedirects: 3}), s.URL+"/0")
		require.ErrorIs(t, err, outbound.ErrTooManyRedirects)
		require.EqualValues(t, 4, s.requests.Load(), "the first request and 3 redirects")
	})

	t.Run("DefaultIsFive", func(t *testing.T) {
		t.Parallel()
		s := redirector(t)
		_, err := get(t, client(t, outbound.Options{AllowPrivate: true}), s.URL+"/0")
		require.ErrorIs(t, err, outbound.ErrTooManyRedirects)
		require.EqualValues(t, 1+outbound.DefaultMaxRedirects, s.requests.Load())
	})

	t.Run("FollowsUpToMax", func(t *testing.T) {
		t.Parallel()
		s := setup(t, func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
			if n >= 3 {
				return
			}
			http.Redirect(w, r, "/"+strconv.Itoa(n+1), http.StatusTemporaryRedirect)
		})
		code, err := get(t, client(t, outbound.Options{AllowPrivate: true, MaxRedirects: 3}), s.URL+"/0")
		require.NoError(t, err)
		require.Equal(t, "200", code)
	})

	t.Run("NegativeFollowsNone", func(t *testing.T) {
		t.Parallel()
		s := redirector(t)
		code, err := get(t, client(t, outbound.Options{AllowPrivate: true, MaxRedirects: -1}), s.URL+"/0")
		require.NoError(t, err)
		require.Equal(t, "302", code)
		require.EqualValues(t, 1, s.requests.Load())
	})

	t.Run("ChecksEveryHop", func(t *testing.T) {
		t.Parallel()
		// 127.0.0.1 is allowed, 127.0.0.2 is not: the guard refuses the second
		// hop before its socket connects, so nothing else is ever dialled.
		s := setup(t, func(w http.ResponseWriter, r *http.Request) {
			port := r.Context().Value(http.LocalAddrContextKey).(net.Addr).(*net.TCPAddr).Port
			http.Redirect(w, r, "http://127.0.0.2:"+strconv.Itoa(port)+"/", http.StatusFound)
		})
		c := client(t, outbound.Options{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
		_, err := get(t, c, s.URL)
		require.ErrorIs(t, err, outbound.ErrDenied)
		var de *outbound.DeniedError
		require.True(t, errors.As(err, &de))
		require.Equal(t, netip.MustParseAddr("127.0.0.2"), de.Addr)
		require.EqualValues(t, 1, s.requests.Load())
	})

	t.Run("RefusesOtherSchemes", func(t *testing.T) {
		t.Parallel()
		s := setup(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		})
		_, err := get(t, client(t, outbound.Options{AllowPrivate: true}), s.URL)
		require.ErrorContains(t, err, "unsupported scheme")
	})
}
