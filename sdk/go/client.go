// Package tock is the Go client of tock's HTTP API (/api/v1): typed requests
// and views for every route, errors as *Error, page iterators, and retries
// that are safe: a 429 or 503 is tried again after a capped backoff (or the
// server's Retry-After), and every create carries an Idempotency-Key that
// stays the same across the retries of one call, so a retried create never
// creates twice.
//
//	c := tock.New("https://tock.example.com", os.Getenv("TOCK_TOKEN"))
//	job, err := c.Jobs.Create(ctx, tock.JobSpec{Name: "report", Type: "ping",
//		Schedule: &tock.Schedule{Cron: "0 9 * * 1", Timezone: "Europe/Berlin"},
//		Payload:  tock.PingPayload{URL: "https://example.com/health"}})
package tock

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client talks to one tock dashboard as one caller. It is safe for
// concurrent use.
type Client struct {
	base  string
	token string
	http  *http.Client
	agent string
	retry retryPolicy

	// Jobs, Runs, DeadLetters, Flows, Backfills, Calendars, Users and Keys
	// group the routes by what they act on.
	Jobs        *JobsService
	Runs        *RunsService
	DeadLetters *DeadLettersService
	Flows       *FlowsService
	Backfills   *BackfillsService
	Calendars   *CalendarsService
	Users       *UsersService
	Keys        *KeysService
}

// Option changes how New builds a Client.
type Option func(*Client)

// WithHTTPClient sends the requests through hc instead of a client with a
// 30 s timeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option { return func(c *Client) { c.agent = ua } }

// WithRetries bounds the retries of a 429 or 503 answer: at most attempts
// tries in all (1 turns retrying off), waiting base, 2×base, 4×base… between
// them, never more than max (a Retry-After longer than max is cut to max).
func WithRetries(attempts int, base, max time.Duration) Option {
	return func(c *Client) {
		c.retry.attempts = max1(attempts)
		c.retry.base = base
		c.retry.max = max
	}
}

// New returns a client of the dashboard at baseURL (such as
// "https://tock.example.com") that authenticates with token: the admin token
// or an API key.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{
		base:  strings.TrimRight(baseURL, "/"),
		token: token,
		http:  &http.Client{Timeout: 30 * time.Second},
		agent: "tock-go",
		retry: defaultRetry(),
	}
	for _, o := range opts {
		o(c)
	}
	c.Jobs = &JobsService{c: c}
	c.Runs = &RunsService{c: c}
	c.DeadLetters = &DeadLettersService{c: c}
	c.Flows = &FlowsService{c: c}
	c.Backfills = &BackfillsService{c: c}
	c.Calendars = &CalendarsService{c: c}
	c.Users = &UsersService{c: c}
	c.Keys = &KeysService{c: c}
	return c
}

// CallOption changes one call.
type CallOption func(*call)

// IdempotencyKey sends key as the call's Idempotency-Key header: a repeat
// of the same request with the same key within 24 hours gets the first
// answer back and changes nothing. Creates get a random key when none is
// given; any other write on jobs accepts one too.
func IdempotencyKey(key string) CallOption { return func(r *call) { r.idemKey = key } }

// call is one API call: what to send, and how to treat it.
type call struct {
	method string
	path   string
	query  url.Values
	body   any
	// create marks a call that makes jobs: it gets an Idempotency-Key of its
	// own unless the caller gave one.
	create  bool
	idemKey string
	// readOnly marks a POST that changes nothing (a preview): safe to repeat.
	readOnly bool
	// status, when set, receives the final answer's HTTP status.
	status *int
}

// do sends rq, retrying a 429 or 503 as the client's policy allows, and
// decodes a 2xx answer's body into out (when out is not nil). Any other
// answer is an *Error.
func (c *Client) do(ctx context.Context, rq call, out any, opts ...CallOption) error {
	for _, o := range opts {
		o(&rq)
	}
	if rq.create && rq.idemKey == "" {
		rq.idemKey = newIdempotencyKey()
	}
	var body []byte
	if rq.body != nil {
		var err error
		if body, err = json.Marshal(rq.body); err != nil {
			return fmt.Errorf("tock: encode %s %s: %w", rq.method, rq.path, err)
		}
	}
	target := c.base + rq.path
	if len(rq.query) > 0 {
		target += "?" + rq.query.Encode()
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.send(ctx, rq, target, body)
		if err != nil {
			return err
		}
		wait, again := c.retry.next(attempt, resp, rq.retrySafe())
		if !again {
			if rq.status != nil {
				*rq.status = resp.StatusCode
			}
			return decode(resp, rq, out)
		}
		// The answer is dropped; its body is read so the connection is reused.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err := c.retry.sleep(ctx, wait); err != nil {
			return fmt.Errorf("tock: %s %s: %w", rq.method, rq.path, err)
		}
	}
}

// retrySafe says whether a 503 may be sent again: the server keeps no 5xx
// answer, so a repeat runs again, which only a request that is the same
// every time it runs can afford. A 429 was refused before any work and is
// always safe to repeat.
func (rq call) retrySafe() bool {
	switch rq.method {
	case http.MethodGet, http.MethodPut, http.MethodDelete:
		return true
	}
	return rq.readOnly || rq.idemKey != ""
}

func (c *Client) send(ctx context.Context, rq call, target string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("tock: %s %s: %w", rq.method, rq.path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.agent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if rq.idemKey != "" {
		req.Header.Set("Idempotency-Key", rq.idemKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// *url.Error repeats the method and URL; say them once, with the
		// server's address, which tells which dashboard did not answer.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("tock: %s %s%s: %w", rq.method, c.base, rq.path, err)
	}
	return resp, nil
}

// decode reads resp into out, or into an *Error when it is not a 2xx.
func decode(resp *http.Response, rq call, out any) error {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("tock: %s %s: read answer: %w", rq.method, rq.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return newError(resp, b)
	}
	if out == nil || len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("tock: %s %s: decode answer: %w", rq.method, rq.path, err)
	}
	return nil
}

// newIdempotencyKey returns 128 random bits in hex, prefixed so that the
// server's records show where the key came from.
func newIdempotencyKey() string {
	return "tock-go-" + rand.Text()
}

// path joins escaped segments onto a route: path("/api/v1/jobs", id).
func path(route string, segments ...string) string {
	var b strings.Builder
	b.WriteString(route)
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
