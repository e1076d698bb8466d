package jobtype

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
)

// TypeAMQP is a message published to a RabbitMQ (AMQP 0-9-1) exchange.
const TypeAMQP job.Type = "amqp"

// AMQP is the amqp job type.
var AMQP = Kind{
	Type:    TypeAMQP,
	Summary: "publishes the body to an AMQP exchange with a routing key, persistent, confirmed by the broker",
	Example: AMQPPayload{URL: "amqps://user:password@rabbitmq.example.com/vhost", Exchange: "orders", RoutingKey: "remind", Body: json.RawMessage(`{"order":1234}`)},
	Check:   checkAMQP,
	New: func(d Deps) Executor {
		return typed(TypeAMQP, (&amqpExecutor{brokers: d.Brokers, version: d.Version}).run)
	},
	Secrets: secretsOf(func(p *AMQPPayload) (string, []*Spot) {
		dest, spot := UserinfoSpot("url", &p.URL)
		return dest, spots(spot)
	}, ""),
}

// AMQPPayload is the payload of an amqp job. URL carries the user and
// password; it is a secret, never quoted in a run's output or error. An
// empty Exchange is the default exchange, which routes to the queue named
// by RoutingKey.
type AMQPPayload struct {
	URL        string            `json:"url"`
	Exchange   string            `json:"exchange"`
	RoutingKey string            `json:"routing_key"`
	Body       json.RawMessage   `json:"body"`
	Headers    map[string]string `json:"headers,omitempty"`
}

// amqpChannelsPerConn bounds the channels, and so the publishes waiting
// for their confirms, on one connection.
const amqpChannelsPerConn = 32

func checkAMQP(raw json.RawMessage, targets outbound.Options) error {
	var p AMQPPayload
	if err := decodeStrict(raw, &p); err != nil {
		return invalid("payload", "%s", err)
	}
	if _, err := checkBrokerURL("payload.url", p.URL, targets, "amqp", "amqps"); err != nil {
		return err
	}
	if _, err := amqp.ParseURI(p.URL); err != nil {
		return invalid("payload.url", "is not an AMQP URI such as amqps://user:password@host/vhost")
	}
	if len(p.Exchange) > 255 || strings.ContainsAny(p.Exchange, "\r\n") {
		return invalid("payload.exchange", "must be at most 255 bytes on one line")
	}
	if len(p.RoutingKey) > 255 || strings.ContainsAny(p.RoutingKey, "\r\n") {
		return invalid("payload.routing_key", "must be at most 255 bytes on one line")
	}
	if p.Exchange == "" && p.RoutingKey == "" {
		return invalid("payload.routing_key", "is required with the default exchange (it names the queue)")
	}
	if err := checkBody("payload.body", p.Body); err != nil {
		return err
	}
	return checkHeaders("payload.headers", p.Headers)
}

// amqpExecutor publishes amqp jobs: persistent, mandatory (a message no
// queue takes is a failure, not a silent drop), with publisher confirms;
// the attempt succeeds when the broker confirms it.
type amqpExecutor struct {
	brokers *Brokers
	version string
}

// amqpConn is a pooled connection and its idle confirm-mode channels.
type amqpConn struct {
	conn *amqp.Connection
	idle chan *amqpChannel
	// slots bounds the channels open at once.
	slots chan struct{}
}

// amqpChannel is a channel in confirm mode with its returns: a channel
// carries one publish at a time, so a return on it belongs to that publish.
type amqpChannel struct {
	ch      *amqp.Channel
	returns chan amqp.Return
}

func (c *amqpConn) Close() error { return c.conn.Close() }
func (c *amqpConn) alive() bool  { return !c.conn.IsClosed() }

// channel takes an idle channel or opens one, waiting while the
// connection has amqpChannelsPerConn in use.
func (c *amqpConn) channel(ctx context.Context) (*amqpChannel, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		select {
		case ch := <-c.idle:
			if ch.ch.IsClosed() {
				continue
			}
			return ch, nil
		default:
		}
		break
	}
	ch, err := c.conn.Channel()
	if err != nil {
		<-c.slots
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		<-c.slots
		return nil, err
	}
	return &amqpChannel{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, 1))}, nil
}

// release gives a channel back: kept when healthy, closed when not.
func (c *amqpConn) release(ch *amqpChannel, healthy bool) {
	if healthy && !ch.ch.IsClosed() {
		select {
		case c.idle <- ch:
		default:
			_ = ch.ch.Close()
		}
	} else {
		_ = ch.ch.Close()
	}
	<-c.slots
}

func (e *amqpExecutor) conn(ctx context.Context, url string) (*amqpConn, error) {
	c, err := e.brokers.get(ctx, "amqp "+url, func(d *net.Dialer) (brokerConn, error) {
		conn, err := amqp.DialConfig(url, amqp.Config{
			Dial: func(network, addr string) (net.Conn, error) {
				conn, err := d.Dial(network, addr)
				if err != nil {
					return nil, err
				}
				// As amqp.DefaultDial: a server that accepts and never
				// answers must not hold the handshake forever. The library
				// clears the deadline once the connection is open.
				return conn, conn.SetDeadline(time.Now().Add(brokerDialTimeout))
			},
			Heartbeat:  10 * time.Second,
			Properties: amqp.Table{"product": userAgent(e.version)},
		})
		if err != nil {
			return nil, err
		}
		return &amqpConn{conn: conn, idle: make(chan *amqpChannel, amqpChannelsPerConn), slots: make(chan struct{}, amqpChannelsPerConn)}, nil
	})
	if err != nil {
		return nil, err
	}
	return c.(*amqpConn), nil
}

// run publishes one attempt, with the payload's headers and tock's
// (Idempotency-Key, X-Tock-Job-Id, X-Tock-Scheduled-For, X-Tock-Attempt)
// as message headers and the occurrence's key as message_id.
func (e *amqpExecutor) run(ctx context.Context, t Task, p AMQPPayload) Outcome {
	start := time.Now()
	ctx, cancel, limit := withTimeout(ctx, t, start)
	defer cancel()
	c, err := e.conn(ctx, p.URL)
	if err != nil {
		return brokerFailure(ctx, "connect to the AMQP broker", err, limit, start)
	}
	ch, err := c.channel(ctx)
	if err != nil {
		return brokerFailure(ctx, "open a channel", err, limit, start)
	}
	headers := amqp.Table{}
	for k, v := range p.Headers {
		headers[k] = v
	}
	for k, v := range tockHeaders(t) {
		headers[k] = v
	}
	dc, err := ch.ch.PublishWithDeferredConfirmWithContext(ctx, p.Exchange, p.RoutingKey, true, false, amqp.Publishing{
		Headers:      headers,
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		MessageId:    t.Key,
		Timestamp:    time.Now(),
		AppId:        userAgent(e.version),
		Body:         p.Body,
	})
	if err != nil {
		c.release(ch, false)
		return brokerFailure(ctx, "publish", err, limit, start)
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		// The confirm may still come; the channel cannot be reused safely.
		c.release(ch, false)
		return brokerFailure(ctx, "wait for the broker's confirm", err, limit, start)
	}
	var ret *amqp.Return
	select {
	case r := <-ch.returns:
		ret = &r
	default:
	}
	c.release(ch, true)
	latency := time.Since(start)
	switch {
	case ret != nil:
		return Outcome{Latency: latency, Error: clean([]byte("the broker returned the message: "+strconv.Itoa(int(ret.ReplyCode))+" "+ret.ReplyText+" (no queue is bound to the exchange with this routing key)"), OutputLimit)}
	case !acked:
		return Outcome{Latency: latency, Error: "the broker refused the message (nack)"}
	}
	out, _ := json.Marshal(map[string]any{"confirmed": true, "delivery_tag": dc.DeliveryTag, "message_id": t.Key})
	return Outcome{OK: true, Latency: latency, Output: string(out)}
}
