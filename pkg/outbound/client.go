package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// Defaults of Options. The worker sends thousands of requests a second, often to
// one host, so idle connections are kept generously: a new TCP and TLS handshake
// per request would cost more than the request.
const (
	DefaultMaxRedirects        = 5
	DefaultMaxIdleConnsPerHost = 1024
	DefaultMaxIdleConns        = 4096
	DefaultDialTimeout         = 10 * time.Second
)

// Fixed transport settings. The response header wait has no timeout of its own:
// the request's context, set from the job's timeout, bounds it.
const (
	tlsHandshakeTimeout = 10 * time.Second
	idleConnTimeout     = 90 * time.Second
	// maxResponseHeaderBytes bounds the headers of a response; the body is
	// bounded by whoever reads it.
	maxResponseHeaderBytes = 64 << 10
)

// ErrTooManyRedirects is returned (wrapped in a *url.Error) when a response
// would lead past Options.MaxRedirects.
var ErrTooManyRedirects = errors.New("too many redirects")

// Options configure NewClient. The zero value is the safe production setting.
type Options struct {
	// AllowPrivate lifts the guard entirely: every address may be dialled. It is
	// meant for local development and tests, where targets live on loopback or a
	// private network; never set it where a metadata service is reachable.
	AllowPrivate bool
	// AllowCIDRs are ranges the operator allows although the guard denies them,
	// such as an internal network that hosts legitimate targets.
	AllowCIDRs []netip.Prefix
	// MaxRedirects is how many redirects one request may follow; 0 means
	// DefaultMaxRedirects and a negative value follows none (the 3xx response is
	// returned as it is).
	MaxRedirects int
	// MaxConnsPerHost caps connections per host, dialling, active and idle
	// together; 0 means no cap.
	MaxConnsPerHost int
	// MaxIdleConnsPerHost is how many idle connections are kept per host;
	// 0 means DefaultMaxIdleConnsPerHost.
	MaxIdleConnsPerHost int
	// MaxIdleConns is how many idle connections are kept across all hosts;
	// 0 means DefaultMaxIdleConns.
	MaxIdleConns int
	// DialTimeout bounds one TCP connect; 0 means DefaultDialTimeout. The
	// request's context bounds it too.
	DialTimeout time.Duration
	// SQSHosts are hosts (a name, or name:port) besides Amazon's own SQS
	// endpoints that sqs jobs may send to, signed with the worker's AWS
	// credentials: a local SQS such as ElasticMQ. The guard still applies.
	SQSHosts []string
}

// NewDialer returns a dialer whose every connection is checked by the guard
// at connect time, for protocols other than HTTP (a broker's address is the
// user's too).
func NewDialer(opts Options) *net.Dialer {
	dialTimeout := opts.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = DefaultDialTimeout
	}
	return &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: newGuard(opts).control}
}

// NewClient returns a client whose every connection, including each redirect
// hop, is checked by the guard at connect time. It never uses a proxy, so the
// address checked is the address connected to. It sets no overall timeout:
// callers bound each request with its context.
func NewClient(opts Options) *http.Client {
	dialer := NewDialer(opts)
	idlePerHost := opts.MaxIdleConnsPerHost
	if idlePerHost <= 0 {
		idlePerHost = DefaultMaxIdleConnsPerHost
	}
	idle := opts.MaxIdleConns
	if idle <= 0 {
		idle = DefaultMaxIdleConns
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            canonicalDial(dialer),
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           idle,
		MaxIdleConnsPerHost:    idlePerHost,
		MaxConnsPerHost:        opts.MaxConnsPerHost,
		IdleConnTimeout:        idleConnTimeout,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
	}
	return &http.Client{Transport: tr, CheckRedirect: checkRedirect(opts.MaxRedirects)}
}

// canonicalDial dials an address spelled in any of inet_aton's forms
// (127.1, 0x7f000001) as the address it spells, as ParseHost reads it at
// creation, so that what was checked then is what the guard sees now,
// whichever resolver the process uses. Names go to the resolver as they are.
func canonicalDial(d *net.Dialer) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil {
			addr = net.JoinHostPort(DialHost(host), port)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// checkRedirect follows at most max redirects, and only to http or https. The
// next hop is dialled through the same transport, so the guard checks it too.
func checkRedirect(max int) func(*http.Request, []*http.Request) error {
	if max == 0 {
		max = DefaultMaxRedirects
	}
	return func(req *http.Request, via []*http.Request) error {
		if max < 0 {
			return http.ErrUseLastResponse
		}
		if len(via) > max {
			return fmt.Errorf("%w: stopped after %d", ErrTooManyRedirects, max)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("redirect to unsupported scheme %q", req.URL.Scheme)
		}
		return nil
	}
}
