package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/testenv"
)

// keyCounter counts the messages a broker delivered, by idempotency key.
type keyCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (k *keyCounter) add(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.counts == nil {
		k.counts = map[string]int{}
	}
	k.counts[key]++
}

// missing returns the keys of want not counted yet, and how many keys were
// counted more than once.
func (k *keyCounter) missing(want []string) (miss []string, dup int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range want {
		if k.counts[key] == 0 {
			miss = append(miss, key)
		}
	}
	for _, n := range k.counts {
		if n > 1 {
			dup++
		}
	}
	return miss, dup
}

// TestQueueTargets is the queue targets' acceptance through the real
// services (1 scheduler, 2 workers): recurring and one-off jobs delivered to
// NATS JetStream, RabbitMQ and a local SQS, each occurrence counted by its
// idempotency key on the broker's side. Two seconds into the run every
// broker goes away for two seconds (the connections through a proxy cut and
// refused; SQS answers 500), and nothing is lost: every occurrence arrives,
// JetStream and the FIFO queue hold each once, and every job ends completed.
func TestQueueTargets(t *testing.T) {
	natsURL, amqpURL := testenv.NATSURL(), testenv.AMQPURL()
	natsProxy := testenv.NewProxy(t, testenv.Broker(t, natsURL))
	amqpProxy := testenv.NewProxy(t, testenv.Broker(t, amqpURL))
	sqs := testenv.NewSQS(t)
	c := start(t, cluster.Options{
		Schedulers: 1, Workers: 2,
		Env:       append(sqs.Env(), "TOCK_RETRY_BACKOFF=200ms", "TOCK_RETRY_BACKOFF_MAX=1s"),
		WorkerEnv: []string{"TOCK_VISIBILITY_TIMEOUT=3s"},
	})
	ctx := t.Context()
	tag := "tock-e2e-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")

	// NATS: a stream capturing the test's subjects; the messages are read
	// back from it at the end.
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: tag, Subjects: []string{tag + ".>"}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), tag) })

	// RabbitMQ: an exchange bound to a queue the test consumes.
	conn, err := amqp.Dial(amqpURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	require.NoError(t, ch.ExchangeDeclare(tag, "direct", false, true, false, false, nil))
	q, err := ch.QueueDeclare(tag, false, true, true, false, nil)
	require.NoError(t, err)
	require.NoError(t, ch.QueueBind(q.Name, "remind", tag, false, nil))
	deliveries, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	require.NoError(t, err)
	var rabbit keyCounter
	go func() {
		for d := range deliveries {
			rabbit.add(d.MessageId)
		}
	}()

	type target struct {
		name    string
		typ     string
		payload func(i int) map[string]any
	}
	targets := []target{
		{"nats", "nats", func(i int) map[string]any {
			return map[string]any{"url": testenv.Via(natsURL, natsProxy.Addr()), "subject": fmt.Sprintf("%s.job.%d", tag, i), "body": map[string]any{"i": i}}
		}},
		{"amqp", "amqp", func(i int) map[string]any {
			return map[string]any{"url": testenv.Via(amqpURL, amqpProxy.Addr()), "exchange": tag, "routing_key": "remind", "body": map[string]any{"i": i}}
		}},
		{"sqs", "sqs", func(i int) map[string]any {
			return map[string]any{"queue_url": sqs.QueueURL(tag + ".fifo"), "message_body": map[string]any{"i": i}}
		}},
	}

	const (
		oneOffs     = 30
		occurrences = 8
	)
	api := c.API()
	t0 := time.Now().Add(3 * time.Second).Truncate(time.Second)
	want := map[string][]string{}
	var jobs []cluster.Job
	for _, tg := range targets {
		ten := 10
		for i := range oneOffs {
			at := t0.Add(time.Duration(i) * 200 * time.Millisecond)
			j, err := api.CreateJob(ctx, map[string]any{"name": fmt.Sprintf("%s-%d", tg.name, i), "type": tg.typ, "run_at": at,
				"max_retries": ten, "timeout": "5s", "payload": tg.payload(i)})
			require.NoError(t, err)
			jobs = append(jobs, j)
			want[tg.name] = append(want[tg.name], fmt.Sprintf("%s:%d", j.ID, at.UnixMilli()))
		}
		j, err := api.CreateJob(ctx, map[string]any{"name": tg.name + "-recurring", "type": tg.typ, "max_retries": ten, "timeout": "5s",
			"schedule": map[string]any{"cron": "* * * * * *", "start_at": t0, "count": occurrences}, "payload": tg.payload(-1)})
		require.NoError(t, err)
		jobs = append(jobs, j)
		for i := range occurrences {
			want[tg.name] = append(want[tg.name], fmt.Sprintf("%s:%d", j.ID, t0.Add(time.Duration(i)*time.Second).UnixMilli()))
		}
	}

	// Two seconds into the run, every broker goes away for two seconds.
	cluster.SleepUntil(ctx, t0.Add(2*time.Second))
	natsProxy.Down()
	amqpProxy.Down()
	sqs.SetFailing(true)
	t.Log("brokers down")
	time.Sleep(2 * time.Second)
	natsProxy.Up()
	amqpProxy.Up()
	sqs.SetFailing(false)
	t.Log("brokers up")

	natsKeys := func() *keyCounter {
		var k keyCounter
		info, err := stream.Info(ctx)
		require.NoError(t, err)
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			m, err := stream.GetMsg(ctx, seq)
			require.NoError(t, err)
			k.add(m.Header.Get(jetstream.MsgIDHeader))
			require.Equal(t, m.Header.Get(jetstream.MsgIDHeader), m.Header.Get("Idempotency-Key"))
		}
		return &k
	}
	sqsKeys := func() *keyCounter {
		var k keyCounter
		for _, m := range sqs.Messages(t) {
			k.add(m.Attributes["Idempotency-Key"])
			require.Equal(t, m.Attributes["Idempotency-Key"], m.DeduplicationID)
		}
		return &k
	}
	counted := func() map[string]*keyCounter {
		return map[string]*keyCounter{"nats": natsKeys(), "amqp": &rabbit, "sqs": sqsKeys()}
	}
	arrived := cluster.WaitUntil(60*time.Second, 250*time.Millisecond, func() bool {
		for name, k := range counted() {
			if miss, _ := k.missing(want[name]); len(miss) > 0 {
				return false
			}
		}
		return true
	})
	for name, k := range counted() {
		miss, dup := k.missing(want[name])
		t.Logf("%s: %d occurrences expected, %d missing, %d delivered more than once", name, len(want[name]), len(miss), dup)
		require.Empty(t, miss, "%s: occurrences lost", name)
		if name != "amqp" {
			// JetStream drops a repeated Nats-Msg-Id and a FIFO queue a
			// repeated deduplication id: each occurrence is there once.
			require.Zero(t, dup, "%s: an occurrence was delivered twice", name)
		}
	}
	require.True(t, arrived)

	// RabbitMQ has no deduplication: an attempt whose confirm was lost with
	// the connection is published again, under the same message_id, for the
	// consumer to drop. Every job ends completed.
	require.True(t, cluster.WaitUntil(30*time.Second, 250*time.Millisecond, func() bool {
		for _, j := range jobs {
			got, err := api.GetJob(ctx, j.ID)
			if err != nil || got.Status != "completed" {
				return false
			}
		}
		return true
	}), "every job ends completed")
	// The outage was felt: attempts due while the brokers were away failed
	// and were retried, and none failed for good.
	failed := map[string]int{}
	for _, j := range jobs {
		runs, err := api.Runs(ctx, j.ID, 100)
		require.NoError(t, err)
		require.False(t, slices.ContainsFunc(runs, func(r cluster.Run) bool { return r.Status == "permanently_failed" }),
			"job %s: no occurrence failed for good", j.Name)
		for _, r := range runs {
			if r.Status == "failed" {
				failed[j.Type]++
			}
		}
	}
	t.Logf("attempts failed during the outage and retried: %v", failed)
	for _, tg := range targets {
		require.NotZero(t, failed[tg.typ], "%s: no attempt met the outage", tg.name)
	}
}
