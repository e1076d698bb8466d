package jobtype_test

import (
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/testenv"
)

// brokerRegistry runs tasks with broker connections allowed to loopback.
func brokerRegistry(t *testing.T) *jobtype.Registry {
	t.Helper()
	b := jobtype.NewBrokers(outbound.Options{AllowPrivate: true})
	t.Cleanup(b.Close)
	return jobtype.NewRegistry(jobtype.Deps{Version: version, Brokers: b})
}

// brokerTask is an attempt of a fresh occurrence of typ with payload p.
func brokerTask(t *testing.T, typ job.Type, p any) jobtype.Task {
	t.Helper()
	tk := task(t, typ, p)
	occ := job.Occurrence{JobID: job.NewID(), ScheduledFor: scheduledFor, Attempt: 1}
	tk.JobID, tk.Attempt, tk.Key = occ.JobID, occ.Attempt, occ.Key()
	return tk
}

func TestNATS(t *testing.T) {
	t.Parallel()
	u := testenv.NATSURL()
	host := testenv.Broker(t, u)
	nc, err := nats.Connect(u)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	name := strings.ReplaceAll(testenv.Name(t), "-", "_")
	stream, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.DeleteStream(t.Context(), name) })
	reg := brokerRegistry(t)

	t.Run("PublishesToTheStreamOnceWhateverTheAttempts", func(t *testing.T) {
		tk := traced(brokerTask(t, jobtype.TypeNATS, jobtype.NATSPayload{URL: u, Subject: name + ".once", Body: json.RawMessage(`{"n":1}`), Headers: map[string]string{"X-Team": "ops"}}))
		out := execute(t, reg, tk)
		require.True(t, out.OK, out.Error)
		var ack struct {
			Stream    string `json:"stream"`
			Seq       uint64 `json:"seq"`
			Duplicate bool   `json:"duplicate"`
		}
		require.NoError(t, json.Unmarshal([]byte(out.Output), &ack))
		require.Equal(t, name, ack.Stream)
		require.False(t, ack.Duplicate)
		// The same attempt again (a redelivery): the stream drops it.
		again := execute(t, reg, tk)
		require.True(t, again.OK, again.Error)
		require.Contains(t, again.Output, `"duplicate":true`)
		msg, err := stream.GetMsg(t.Context(), ack.Seq)
		require.NoError(t, err)
		require.JSONEq(t, `{"n":1}`, string(msg.Data))
		require.Equal(t, tk.Key, msg.Header.Get("Nats-Msg-Id"))
		require.Equal(t, tk.Key, msg.Header.Get("Idempotency-Key"))
		require.Equal(t, tk.JobID.String(), msg.Header.Get("X-Tock-Job-Id"))
		require.Equal(t, "ops", msg.Header.Get("X-Team"))
		require.Equal(t, traceParent, msg.Header.Get("traceparent"))
		require.Equal(t, traceState, msg.Header.Get("tracestate"))
	})

	t.Run("WithoutAStreamPublishesToCoreNATS", func(t *testing.T) {
		subject := "core_" + name + ".hello"
		sub, err := nc.SubscribeSync(subject)
		require.NoError(t, err)
		require.NoError(t, nc.Flush())
		tk := brokerTask(t, jobtype.TypeNATS, jobtype.NATSPayload{URL: u, Subject: subject, Body: json.RawMessage(`"hi"`)})
		out := execute(t, reg, tk)
		require.True(t, out.OK, out.Error)
		require.Contains(t, out.Output, "core NATS")
		msg, err := sub.NextMsg(5 * time.Second)
		require.NoError(t, err)
		require.Equal(t, `"hi"`, string(msg.Data))
		require.Equal(t, tk.Key, msg.Header.Get("Idempotency-Key"))
	})

	t.Run("ACutConnectionLosesNothing", func(t *testing.T) {
		p := testenv.NewProxy(t, host)
		via := testenv.Via(u, p.Addr())
		keys := map[string]bool{}
		for i := range 40 {
			if i == 20 {
				p.Cut()
			}
			tk := brokerTask(t, jobtype.TypeNATS, jobtype.NATSPayload{URL: via, Subject: name + ".cut", Body: json.RawMessage(`1`)})
			tk.Timeout = 2 * time.Second
			// An attempt that fails is retried, as the worker would.
			require.Eventually(t, func() bool { return execute(t, reg, tk).OK }, 20*time.Second, 100*time.Millisecond)
			keys[tk.Key] = true
		}
		info, err := js.Stream(t.Context(), name)
		require.NoError(t, err)
		n := 0
		cons, err := info.OrderedConsumer(t.Context(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{name + ".cut"}})
		require.NoError(t, err)
		batch, err := cons.FetchNoWait(100)
		require.NoError(t, err)
		for m := range batch.Messages() {
			require.True(t, keys[m.Headers().Get("Nats-Msg-Id")], "a message of this run")
			n++
		}
		require.Equal(t, 40, n, "every occurrence in the stream once")
	})
}

func TestAMQP(t *testing.T) {
	t.Parallel()
	u := testenv.AMQPURL()
	host := testenv.Broker(t, u)
	conn, err := amqp.Dial(u)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	q, err := ch.QueueDeclare(testenv.Name(t), false, true, false, false, nil)
	require.NoError(t, err)
	reg := brokerRegistry(t)

	t.Run("PublishesPersistentAndConfirmed", func(t *testing.T) {
		tk := traced(brokerTask(t, jobtype.TypeAMQP, jobtype.AMQPPayload{URL: u, RoutingKey: q.Name, Body: json.RawMessage(`{"n":1}`), Headers: map[string]string{"X-Team": "ops"}}))
		out := execute(t, reg, tk)
		require.True(t, out.OK, out.Error)
		require.Contains(t, out.Output, `"confirmed":true`)
		var m amqp.Delivery
		require.Eventually(t, func() bool {
			var ok bool
			m, ok, err = ch.Get(q.Name, true)
			require.NoError(t, err)
			return ok
		}, 5*time.Second, 20*time.Millisecond)
		require.JSONEq(t, `{"n":1}`, string(m.Body))
		require.Equal(t, tk.Key, m.MessageId)
		require.Equal(t, uint8(amqp.Persistent), m.DeliveryMode)
		require.Equal(t, tk.Key, m.Headers["Idempotency-Key"])
		require.Equal(t, "ops", m.Headers["X-Team"])
		require.Equal(t, traceParent, m.Headers["traceparent"])
	})

	t.Run("AMessageNoQueueTakesFails", func(t *testing.T) {
		tk := brokerTask(t, jobtype.TypeAMQP, jobtype.AMQPPayload{URL: u, RoutingKey: "no-such-queue-" + q.Name, Body: json.RawMessage(`1`)})
		out := execute(t, reg, tk)
		require.False(t, out.OK)
		require.Contains(t, out.Error, "NO_ROUTE")
		require.NotContains(t, out.Error, "guest", "no credentials in the error")
	})

	t.Run("ACutConnectionLosesNothing", func(t *testing.T) {
		p := testenv.NewProxy(t, host)
		via := testenv.Via(u, p.Addr())
		keys := map[string]bool{}
		for i := range 40 {
			if i == 20 {
				p.Cut()
			}
			tk := brokerTask(t, jobtype.TypeAMQP, jobtype.AMQPPayload{URL: via, RoutingKey: q.Name, Body: json.RawMessage(`1`)})
			tk.Timeout = 2 * time.Second
			require.Eventually(t, func() bool { return execute(t, reg, tk).OK }, 20*time.Second, 100*time.Millisecond)
			keys[tk.Key] = true
		}
		got := map[string]bool{}
		require.Eventually(t, func() bool {
			for {
				m, ok, err := ch.Get(q.Name, true)
				require.NoError(t, err)
				if !ok {
					break
				}
				require.True(t, keys[m.MessageId], "a message of this run")
				got[m.MessageId] = true
			}
			return len(got) == len(keys)
		}, 5*time.Second, 50*time.Millisecond, "every occurrence delivered")
	})
}

func TestBrokerPayloads(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		typ   job.Type
		raw   string
		field string
	}{
		{"NATSOK", jobtype.TypeNATS, `{"url":"nats://nats.example.com:4222","subject":"a.b","body":{"x":1}}`, ""},
		{"NATSTLSOK", jobtype.TypeNATS, `{"url":"tls://nats.example.com","subject":"a","body":1}`, ""},
		{"NATSScheme", jobtype.TypeNATS, `{"url":"http://nats.example.com","subject":"a","body":1}`, "payload.url"},
		{"NATSPrivate", jobtype.TypeNATS, `{"url":"nats://10.0.0.1:4222","subject":"a","body":1}`, "payload.url"},
		{"NATSLoopback", jobtype.TypeNATS, `{"url":"nats://localhost:4222","subject":"a","body":1}`, "payload.url"},
		{"NATSPortOutOfRange", jobtype.TypeNATS, `{"url":"nats://nats.example.com:0","subject":"a","body":1}`, "payload.url"},
		{"AMQPPortOutOfRange", jobtype.TypeAMQP, `{"url":"amqp://mq.example.com:70000","exchange":"x","routing_key":"y","body":1}`, "payload.url"},
		{"NATSWildcard", jobtype.TypeNATS, `{"url":"nats://nats.example.com","subject":"a.>","body":1}`, "payload.subject"},
		{"NATSNoBody", jobtype.TypeNATS, `{"url":"nats://nats.example.com","subject":"a"}`, "payload.body"},
		{"NATSTockHeader", jobtype.TypeNATS, `{"url":"nats://nats.example.com","subject":"a","body":1,"headers":{"Nats-Msg-Id":"x"}}`, "payload.headers"},
		{"AMQPOK", jobtype.TypeAMQP, `{"url":"amqps://u:p@mq.example.com/vh","exchange":"orders","routing_key":"remind","body":[1]}`, ""},
		{"AMQPDefaultExchangeNeedsAQueue", jobtype.TypeAMQP, `{"url":"amqp://mq.example.com","exchange":"","routing_key":"","body":1}`, "payload.routing_key"},
		{"AMQPScheme", jobtype.TypeAMQP, `{"url":"nats://mq.example.com","exchange":"x","routing_key":"y","body":1}`, "payload.url"},
		{"AMQPMetadata", jobtype.TypeAMQP, `{"url":"amqp://169.254.169.254","exchange":"x","routing_key":"y","body":1}`, "payload.url"},
		{"AMQPUnknownField", jobtype.TypeAMQP, `{"url":"amqp://mq.example.com","exchange":"x","routing_key":"y","body":1,"queue":"z"}`, "payload"},
	} {
		t.Run(tt.name, func(t *testing.T) { checkPayload(t, tt.typ, tt.raw, outbound.Options{}, tt.field) })
	}
}

// checkPayload validates raw as a payload of typ against targets and
// requires it accepted (field "") or refused naming field.
func checkPayload(t *testing.T, typ job.Type, raw string, targets outbound.Options, field string) {
	t.Helper()
	_, err := jobtype.Validate(typ, json.RawMessage(raw), 0, targets)
	if field == "" {
		require.NoError(t, err)
		return
	}
	var fe *job.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, field, fe.Field, fe.Message)
}

// TestSilentBroker: a broker address that accepts connections and never
// answers fails the attempt once the connect bound passes, well before a
// long task timeout, for both types.
func TestSilentBroker(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	reg := brokerRegistry(t)
	for _, tk := range []jobtype.Task{
		brokerTask(t, jobtype.TypeNATS, jobtype.NATSPayload{URL: "nats://" + ln.Addr().String(), Subject: "a", Body: json.RawMessage(`1`)}),
		brokerTask(t, jobtype.TypeAMQP, jobtype.AMQPPayload{URL: "amqp://guest:guest@" + ln.Addr().String() + "/", RoutingKey: "q", Body: json.RawMessage(`1`)}),
	} {
		tk.Timeout = time.Minute
		out := execute(t, reg, tk)
		require.False(t, out.OK)
		require.Contains(t, out.Error, "could not connect", "the connect bound ends it, not the task's minute")
		require.NotContains(t, out.Error, "guest")
	}
}
