package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/telemetry"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestPublisherTracing(t *testing.T) {
	t.Parallel()

	t.Run("ASpanPerPublishThatMovedMembersNoneWhenIdle", func(t *testing.T) {
		t.Parallel()
		b := setupRedis(t)
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
		now := time.Now()
		a, c := occurrence(now.Add(-time.Second), 0), occurrence(now.Add(-time.Second), 1)
		// Due three ticks later: the publisher wakes idle twice or more before it.
		later := occurrence(now.Add(150*time.Millisecond), 0)
		require.NoError(t, b.q.Enqueue(b.ctx, []queue.Entry{{Occurrence: a, DueAt: a.ScheduledFor}, {Occurrence: c, DueAt: c.ScheduledFor},
			{Occurrence: later, DueAt: later.ScheduledFor}}))

		p := b.publisher(100)
		p.tracer = tp.Tracer("publisher")
		stop, done := testenv.GoRun(t, p.Run)
		testenv.WaitUntil(t, 5*time.Second, func() bool { return len(b.stream(t)) == 3 }, "the due members were not published")
		stop()
		testenv.Returned(t, done, 10*time.Second)

		spans := rec.Ended()
		require.Len(t, spans, 2, "a span per publish that moved members; idle ticks make none")
		published := []int64{}
		for _, s := range spans {
			require.Equal(t, "tock.publish", s.Name())
			got := map[string]int64{}
			for _, kv := range s.Attributes() {
				got[string(kv.Key)] = kv.Value.AsInt64()
			}
			require.Equal(t, int64(0), got[string(telemetry.Shard)])
			require.Equal(t, int64(0), got[string(telemetry.Held)])
			published = append(published, got[string(telemetry.Published)])
		}
		require.Equal(t, []int64{2, 1}, published)
	})
}
