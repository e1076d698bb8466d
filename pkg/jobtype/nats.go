package jobtype

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/telemetry"
)

// TypeNATS is a message published to a NATS subject.
const TypeNATS job.Type = "nats"

// NATS is the nats job type.
var NATS = Kind{
	Type:    TypeNATS,
	Summary: "publishes the body to a NATS subject, through JetStream when a stream captures it",
	Example: NATSPayload{URL: "nats://nats.example.com:4222", Subject: "orders.remind", Body: json.RawMessage(`{"order":1234}`)},
	Check:   checkNATS,
	New: func(d Deps) Executor {
		return typed(TypeNATS, (&natsExecutor{brokers: d.Brokers, version: d.Version}).run)
	},
	Secrets: secretsOf(func(p *NATSPayload) (string, []*Spot) {
		dest, spot := UserinfoSpot("url", &p.URL)
		return dest, spots(spot)
	}, ""),
}

// NATSPayload is the payload of a nats job. URL may carry a user and
// password (nats://user:pass@host:4222); it is then a secret, never quoted
// in a run's output or error.
type NATSPayload struct {
	URL     string            `json:"url"`
	Subject string            `json:"subject"`
	Body    json.RawMessage   `json:"body"`
	Headers map[string]string `json:"headers,omitempty"`
}

// checkBrokerURL accepts an absolute URL of one of schemes whose host the
// outbound policy allows.
func checkBrokerURL(field, raw string, targets outbound.Options, schemes ...string) (*url.URL, error) {
	if raw == "" {
		return nil, invalid(field, "is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalid(field, "is not a URL")
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok {
		return nil, invalid(field, "must use %s", strings.Join(schemes, " or "))
	}
	if u.Hostname() == "" {
		return nil, invalid(field, "must have a host")
	}
	if err := checkPort(u.Port()); err != nil {
		return nil, invalid(field, "%s", err)
	}
	if err := checkHost(u.Hostname(), targets); err != nil {
		return nil, invalid(field, "%s", err)
	}
	return u, nil
}

// checkBody requires a JSON body: any value but null.
func checkBody(field string, body json.RawMessage) error {
	if len(body) == 0 || string(body) == "null" {
		return invalid(field, "is required (any JSON value)")
	}
	return nil
}

// checkHeaders refuses header names and values a broker could not carry or
// that would break a line-based protocol, and tock's own headers.
func checkHeaders(field string, h map[string]string) error {
	for k, v := range h {
		if !validHeader(k, v) {
			return invalid(field, "header %q is not a valid header", k)
		}
		if strings.HasPrefix(strings.ToLower(k), "x-tock-") || strings.EqualFold(k, headerIdempotencyKey) || strings.EqualFold(k, jetstream.MsgIDHeader) {
			return invalid(field, "header %q is set by tock", k)
		}
	}
	return nil
}

func checkNATS(raw json.RawMessage, targets outbound.Options) error {
	var p NATSPayload
	if err := decodeStrict(raw, &p); err != nil {
		return invalid("payload", "%s", err)
	}
	if _, err := checkBrokerURL("payload.url", p.URL, targets, "nats", "tls"); err != nil {
		return err
	}
	if p.Subject == "" || strings.ContainsAny(p.Subject, " \t\r\n*>") || strings.HasPrefix(p.Subject, ".") ||
		strings.HasSuffix(p.Subject, ".") || strings.Contains(p.Subject, "..") || len(p.Subject) > 255 {
		return invalid("payload.subject", "must be a NATS subject such as orders.remind: no blanks, no wildcards, at most 255 bytes")
	}
	if err := checkBody("payload.body", p.Body); err != nil {
		return err
	}
	return checkHeaders("payload.headers", p.Headers)
}

// natsExecutor publishes nats jobs. When a JetStream stream captures the
// subject, the publish waits for the stream's ack and sets Nats-Msg-Id to
// the occurrence's key, so the stream drops a redelivered attempt as a
// duplicate; otherwise it is a core publish, flushed to the server.
type natsExecutor struct {
	brokers *Brokers
	version string
}

// natsConn is a pooled NATS connection and what it has learnt about which
// subjects a stream captures.
type natsConn struct {
	nc *nats.Conn
	js jetstream.JetStream
	mu sync.Mutex
	// streams caches, per subject, whether a stream captures it and until
	// when that answer holds.
	streams map[string]streamAnswer
}

type streamAnswer struct {
	captured bool
	until    time.Time
}

// streamAnswerTTL is how long a subject's stream lookup is reused.
const streamAnswerTTL = 5 * time.Second

func (c *natsConn) Close() error { c.nc.Close(); return nil }

// alive: the client reconnects by itself while it can; only a connection
// that gave up is replaced.
func (c *natsConn) alive() bool { return !c.nc.IsClosed() }

// captured reports whether a JetStream stream captures subject.
func (c *natsConn) captured(ctx context.Context, subject string) (bool, error) {
	c.mu.Lock()
	a, ok := c.streams[subject]
	c.mu.Unlock()
	if ok && time.Now().Before(a.until) {
		return a.captured, nil
	}
	_, err := c.js.StreamNameBySubject(ctx, subject)
	switch {
	case err == nil:
		a.captured = true
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, nats.ErrNoResponders):
		a.captured = false
	default:
		return false, err
	}
	a.until = time.Now().Add(streamAnswerTTL)
	c.mu.Lock()
	c.streams[subject] = a
	c.mu.Unlock()
	return a.captured, nil
}

func (e *natsExecutor) conn(ctx context.Context, rawURL string) (*natsConn, error) {
	c, err := e.brokers.get(ctx, "nats "+rawURL, func(d *net.Dialer) (brokerConn, error) {
		nc, err := nats.Connect(rawURL,
			nats.SetCustomDialer(d),
			nats.Name(userAgent(e.version)),
			nats.Timeout(brokerDialTimeout),
			nats.MaxReconnects(-1),
			nats.ReconnectWait(250*time.Millisecond),
			// Nothing is buffered while disconnected: a publish then fails
			// and the attempt is retried, rather than vanishing with a
			// buffer that never reaches the server.
			nats.ReconnectBufSize(-1))
		if err != nil {
			return nil, err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return nil, err
		}
		return &natsConn{nc: nc, js: js, streams: map[string]streamAnswer{}}, nil
	})
	if err != nil {
		return nil, err
	}
	return c.(*natsConn), nil
}

// run publishes one attempt with the payload's headers and tock's
// (Idempotency-Key, X-Tock-Job-Id, X-Tock-Scheduled-For, X-Tock-Attempt,
// and Nats-Msg-Id for JetStream). Output records the stream and sequence the
// server acknowledged, or that the message went to core NATS.
func (e *natsExecutor) run(ctx context.Context, t Task, p NATSPayload) Outcome {
	start := time.Now()
	ctx, cancel, limit := withTimeout(ctx, t, start)
	defer cancel()
	c, err := e.conn(ctx, p.URL)
	if err != nil {
		return brokerFailure(ctx, "connect to the NATS server", err, limit, start)
	}
	msg := nats.NewMsg(p.Subject)
	msg.Data = p.Body
	for k, v := range p.Headers {
		msg.Header.Set(k, v)
	}
	for k, v := range tockHeaders(t) {
		msg.Header.Set(k, v)
	}
	captured, err := c.captured(ctx, p.Subject)
	if err != nil {
		return brokerFailure(ctx, "look up the subject's stream", err, limit, start)
	}
	if !captured {
		if err := c.nc.PublishMsg(msg); err != nil {
			return brokerFailure(ctx, "publish", err, limit, start)
		}
		if err := c.nc.FlushWithContext(ctx); err != nil {
			return brokerFailure(ctx, "flush the publish", err, limit, start)
		}
		return Outcome{OK: true, Latency: time.Since(start), Output: "published to core NATS (no stream captures " + clean([]byte(p.Subject), 256) + ")"}
	}
	ack, err := c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(t.Key))
	if err != nil {
		return brokerFailure(ctx, "publish to JetStream", err, limit, start)
	}
	out, _ := json.Marshal(map[string]any{"stream": ack.Stream, "seq": ack.Sequence, "duplicate": ack.Duplicate})
	return Outcome{OK: true, Latency: time.Since(start), Output: string(out)}
}

// tockHeaders are the headers that identify an attempt, and its W3C trace
// context when it is traced, as every delivery carries them: yielded one
// by one, so that a delivery sets them without a map built per attempt.
func tockHeaders(t Task) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if !yield(headerIdempotencyKey, t.Key) || !yield(headerJobID, t.JobID.String()) ||
			!yield(headerScheduledFor, t.ScheduledFor.UTC().Format(scheduledForLayout)) ||
			!yield(headerAttempt, strconv.Itoa(t.Attempt)) ||
			!t.Nominal.IsZero() && !yield(headerNominalTime, t.Nominal.UTC().Format(scheduledForLayout)) ||
			t.Backfill && !yield(headerBackfill, "true") ||
			t.TraceParent == "" {
			return
		}
		// Lower case, as W3C writes them: a broker's headers keep the case given.
		if yield(telemetry.HeaderTraceParent, t.TraceParent) && t.TraceState != "" {
			yield(telemetry.HeaderTraceState, t.TraceState)
		}
	}
}

// brokerFailure is a failed broker step: a timeout names the limit, and no
// error text quotes the URL (it may carry credentials).
func brokerFailure(ctx context.Context, step string, err error, limit time.Duration, start time.Time) Outcome {
	var denied *outbound.DeniedError
	msg := ""
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		msg = "timeout after " + limit.String() + " trying to " + step
	case errors.Is(ctx.Err(), context.Canceled):
		msg = "cancelled while trying to " + step
	case errors.As(err, &denied):
		msg = denied.Error()
	default:
		msg = fmt.Sprintf("could not %s: %s", step, redact(err))
	}
	return Outcome{Latency: time.Since(start), Error: clean([]byte(msg), OutputLimit)}
}

// redact is err's text without any URL it quotes.
func redact(err error) string {
	s := requestError(err)
	var out []string
	for f := range strings.FieldsSeq(s) {
		if strings.Contains(f, "://") || strings.Contains(f, "@") {
			f = "<url>"
		}
		out = append(out, f)
	}
	return strings.Join(out, " ")
}
