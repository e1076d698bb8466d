package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/smithy-go/encoding/cbor"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
)

// putPath is where the SDK's rpcv2Cbor protocol sends PutMetricData.
const putPath = "/service/GraniteServiceVersion20100801/operation/PutMetricData"

// datum is one metric datum of a PutMetricData request, as CloudWatch got it.
type datum struct {
	Name  string
	Unit  string
	Value float64
	Dims  map[string]string
	Time  time.Time
}

// put is one PutMetricData request, as CloudWatch got it.
type put struct {
	Namespace string
	Data      []datum
}

// fakeCloudWatch stands in for CloudWatch's endpoint: it decodes every
// PutMetricData request and answers 500 while failing is set.
type fakeCloudWatch struct {
	srv      *httptest.Server
	failing  atomic.Bool
	failures atomic.Int64

	mu   sync.Mutex
	puts []put
	errs []error
}

func newFakeCloudWatch(t *testing.T) *fakeCloudWatch {
	t.Helper()
	f := &fakeCloudWatch{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeCloudWatch) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away: its context ended
	}
	p, err := decodePut(r, raw)
	if err != nil {
		f.mu.Lock()
		f.errs = append(f.errs, err)
		f.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	if f.failing.Load() {
		f.failures.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(cbor.Encode(cbor.Map{"__type": cbor.String("InternalServiceError"), "message": cbor.String("try again")}))
		return
	}
	f.mu.Lock()
	f.puts = append(f.puts, p)
	f.mu.Unlock()
	_, _ = w.Write(cbor.Encode(cbor.Map{}))
}

// received returns the successful puts so far, and fails the test if any
// request was not a well-formed, signed PutMetricData.
func (f *fakeCloudWatch) received(t *testing.T) []put {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NoError(t, errors.Join(f.errs...))
	return append([]put(nil), f.puts...)
}

// decodePut checks r is a signed rpcv2Cbor PutMetricData request and decodes
// its body, raw.
func decodePut(r *http.Request, raw []byte) (put, error) {
	switch {
	case r.Method != http.MethodPost || r.URL.Path != putPath:
		return put{}, fmt.Errorf("request %s %s is not PutMetricData", r.Method, r.URL.Path)
	case r.Header.Get("Smithy-Protocol") != "rpc-v2-cbor" || r.Header.Get("Content-Type") != "application/cbor":
		return put{}, fmt.Errorf("protocol %q, content type %q", r.Header.Get("Smithy-Protocol"), r.Header.Get("Content-Type"))
	case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/"):
		return put{}, fmt.Errorf("not signed with the static credentials: %q", r.Header.Get("Authorization"))
	}
	// The SDK gzips a PutMetricData body above 10 KiB: not these, but be ready.
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return put{}, err
		}
		if raw, err = io.ReadAll(gz); err != nil {
			return put{}, err
		}
	}
	v, err := cbor.Decode(raw)
	if err != nil {
		return put{}, fmt.Errorf("decode cbor: %w", err)
	}
	in, ok := v.(cbor.Map)
	if !ok {
		return put{}, fmt.Errorf("body is a %T, not a map", v)
	}
	ns, _ := in["Namespace"].(cbor.String)
	p := put{Namespace: string(ns)}
	data, _ := in["MetricData"].(cbor.List)
	for _, dv := range data {
		m, _ := dv.(cbor.Map)
		name, _ := m["MetricName"].(cbor.String)
		unit, _ := m["Unit"].(cbor.String)
		value, err := cbor.AsFloat64(m["Value"])
		if err != nil {
			return put{}, fmt.Errorf("%s value: %w", name, err)
		}
		at, err := cbor.AsTime(m["Timestamp"])
		if err != nil {
			return put{}, fmt.Errorf("%s timestamp: %w", name, err)
		}
		d := datum{Name: string(name), Unit: string(unit), Value: value, Time: at.UTC(), Dims: map[string]string{}}
		dims, _ := m["Dimensions"].(cbor.List)
		for _, dim := range dims {
			dm, _ := dim.(cbor.Map)
			k, _ := dm["Name"].(cbor.String)
			v, _ := dm["Value"].(cbor.String)
			d.Dims[string(k)] = string(v)
		}
		p.Data = append(p.Data, d)
	}
	return p, nil
}

// cloudWatchBundle is a reporter on the real SDK client, talking to a fake
// CloudWatch, with the leadership and queue sizes a test sets.
type cloudWatchBundle struct {
	fake    *fakeCloudWatch
	cw      *CloudWatch
	leading atomic.Bool
	// asked counts the ticks: Leading is asked once per tick.
	asked    atomic.Int64
	statsErr atomic.Pointer[error]
}

// setupCloudWatch returns a follower reporting stats every 20 ms, and a count
// of the failures it has logged.
func setupCloudWatch(t *testing.T, stats queue.Stats, now time.Time) (*cloudWatchBundle, func() int) {
	t.Helper()
	b := &cloudWatchBundle{fake: newFakeCloudWatch(t)}
	client := cloudwatch.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		HTTPClient:  b.fake.srv.Client(),
		// One attempt: the reporter's next tick is its retry.
		RetryMaxAttempts: 1,
	}, func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(b.fake.srv.URL) })
	log, logs := observed()
	b.cw = &CloudWatch{
		Namespace: "Tock",
		Prefix:    "blue",
		Interval:  20 * time.Millisecond,
		Stats: func(context.Context) (queue.Stats, error) {
			if err := b.statsErr.Load(); err != nil {
				return queue.Stats{}, *err
			}
			return stats, nil
		},
		Leading: func() bool { b.asked.Add(1); return b.leading.Load() },
		Client:  client,
		Log:     log,
		Clock:   func() time.Time { return now },
	}
	return b, func() int { return logs.FilterMessage("cloudwatch_put_failed").Len() }
}

func TestCloudWatch(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stats := queue.Stats{Due: 7, Ready: 42, Pending: 5, Held: 3}

	t.Run("PutsQueueSizesWhileLeading", func(t *testing.T) {
		t.Parallel()
		b, _ := setupCloudWatch(t, stats, now)
		b.leading.Store(true)
		testenv.GoRun(t, b.cw.Run)

		testenv.WaitUntil(t, 5*time.Second, func() bool { return len(b.fake.received(t)) >= 1 }, "no PutMetricData request")
		dims := map[string]string{"Prefix": "blue"}
		require.Equal(t, put{Namespace: "Tock", Data: []datum{
			{Name: "StreamBacklog", Unit: "Count", Value: 42, Dims: dims, Time: now},
			{Name: "StreamPending", Unit: "Count", Value: 5, Dims: dims, Time: now},
			{Name: "DueSetSize", Unit: "Count", Value: 7, Dims: dims, Time: now},
			{Name: "Held", Unit: "Count", Value: 3, Dims: dims, Time: now},
		}}, b.fake.received(t)[0])
	})

	t.Run("SendsNothingWhileFollowing", func(t *testing.T) {
		t.Parallel()
		b, _ := setupCloudWatch(t, stats, now)
		testenv.GoRun(t, b.cw.Run)

		testenv.WaitUntil(t, 5*time.Second, func() bool { return b.asked.Load() >= 5 }, "fewer than 5 ticks")
		require.Empty(t, b.fake.received(t))

		b.leading.Store(true)
		testenv.WaitUntil(t, 5*time.Second, func() bool { return len(b.fake.received(t)) >= 1 }, "no request once leading")
	})

	t.Run("LogsEachOutageOnceAndKeepsGoing", func(t *testing.T) {
		t.Parallel()
		b, failed := setupCloudWatch(t, stats, now)
		b.leading.Store(true)
		b.fake.failing.Store(true)
		testenv.GoRun(t, b.cw.Run)

		testenv.WaitUntil(t, 5*time.Second, func() bool { return b.fake.failures.Load() >= 3 }, "fewer than 3 failed puts")
		require.Equal(t, 1, failed())

		// Two puts through: the reporter has read the first one's answer.
		b.fake.failing.Store(false)
		testenv.WaitUntil(t, 5*time.Second, func() bool { return len(b.fake.received(t)) >= 2 }, "no puts after the outage")
		require.Equal(t, 1, failed())

		// A second outage is logged again.
		b.fake.failing.Store(true)
		testenv.WaitUntil(t, 5*time.Second, func() bool { return failed() == 2 }, "second outage not logged")
	})

	t.Run("LogsStatsFailureWithoutPutting", func(t *testing.T) {
		t.Parallel()
		b, failed := setupCloudWatch(t, stats, now)
		b.leading.Store(true)
		err := errors.New("queue stats: redis down")
		b.statsErr.Store(&err)
		testenv.GoRun(t, b.cw.Run)

		testenv.WaitUntil(t, 5*time.Second, func() bool { return b.asked.Load() >= 5 }, "fewer than 5 ticks")
		require.Equal(t, 1, failed())
		require.Empty(t, b.fake.received(t))
	})

	t.Run("ReturnsWhenContextEnds", func(t *testing.T) {
		t.Parallel()
		b, _ := setupCloudWatch(t, stats, now)
		b.leading.Store(true)
		stop, done := testenv.GoRun(t, b.cw.Run)

		testenv.WaitUntil(t, 5*time.Second, func() bool { return len(b.fake.received(t)) >= 1 }, "no PutMetricData request")
		stop()
		testenv.Returned(t, done, 10*time.Second)
	})
}

func TestNewCloudWatchClient(t *testing.T) {
	// Not parallel: it sets the process environment. No shared AWS files are
	// read, and nothing is sent: credentials load lazily.
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_DEFAULT_REGION", "")

	t.Setenv("AWS_REGION", "")
	_, err := NewCloudWatchClient(t.Context())
	require.ErrorContains(t, err, "AWS_REGION")

	t.Setenv("AWS_REGION", "eu-west-1")
	c, err := NewCloudWatchClient(t.Context())
	require.NoError(t, err)
	require.Equal(t, "eu-west-1", c.Options().Region)
}
