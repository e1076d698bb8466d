// Package metrics defines tock's Prometheus collectors in one place, so every
// service exports the same names (all prefixed tock_) with the same labels and
// buckets, and a dashboard built on them works for any deployment. Each service
// registers only the set it updates, on a registry of its own (NewRegistry),
// and serves it with Handler on its metrics listener, never on the public API.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tockhq/tock/pkg/queue"
)

// LatencyBuckets span one millisecond to ten seconds: tock promises
// millisecond precision, so the low end must resolve single milliseconds,
// while a backlog shows up in the top buckets rather than past them.
var LatencyBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// DurationBuckets suit a job's run (an outbound call bounded by its timeout)
// and an API request: ten milliseconds up to a minute.
var DurationBuckets = []float64{
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// NewRegistry returns a registry holding the Go runtime and process
// collectors; a service adds its own set to it.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves reg in the Prometheus exposition format. A collector that
// fails leaves its metrics out rather than failing the whole scrape.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, ErrorHandling: promhttp.ContinueOnError})
}

// Worker is what a worker measures of the attempts it runs.
type Worker struct {
	// Lateness is how long after its due time each attempt started.
	Lateness prometheus.Histogram
	// Runs counts recorded outcomes by job type and run status.
	Runs *prometheus.CounterVec
	// Duration is how long each attempt ran, by job type.
	Duration *prometheus.HistogramVec
	// Reclaimed counts stream entries taken over from a consumer that left
	// them pending past the visibility timeout.
	Reclaimed prometheus.Counter
	// DeadLettered counts stream entries moved to the dead stream after more
	// than TOCK_MAX_DELIVERIES deliveries without an outcome.
	DeadLettered prometheus.Counter
	// Alerts counts failure alerts (a job's notify) by event and outcome:
	// sent, failed, or dropped when too many were in flight.
	Alerts *prometheus.CounterVec
	// Callbacks counts callback deliveries (a job's notify.callback) by
	// event and outcome: sent, retried (the URL refused or could not be
	// reached; it is tried again), abandoned (after the last try), or
	// dropped (the job, or its callback, is gone).
	Callbacks *prometheus.CounterVec
}

// NewWorker creates the worker's collectors and registers them on reg.
func NewWorker(reg prometheus.Registerer) *Worker {
	w := &Worker{
		Lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tock_job_lateness_seconds",
			Help:    "Time from an attempt's due time to its start.",
			Buckets: LatencyBuckets,
		}),
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tock_runs_total",
			Help: "Recorded run outcomes by job type and run status.",
		}, []string{"type", "status"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tock_run_duration_seconds",
			Help:    "Time an attempt ran, from its start to its outcome.",
			Buckets: DurationBuckets,
		}, []string{"type"}),
		Reclaimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tock_reclaimed_total",
			Help: "Stream entries reclaimed from consumers that left them pending past the visibility timeout.",
		}),
		DeadLettered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tock_dead_lettered_total",
			Help: "Stream entries dead-lettered after more than TOCK_MAX_DELIVERIES deliveries without an outcome.",
		}),
	}
	w.Alerts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tock_alerts_total",
		Help: "Failure alerts by event and outcome (sent, failed, dropped).",
	}, []string{"event", "outcome"})
	w.Callbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tock_callbacks_total",
		Help: "Callback deliveries by event and outcome (sent, retried, abandoned, dropped).",
	}, []string{"event", "outcome"})
	reg.MustRegister(w.Lateness, w.Runs, w.Duration, w.Reclaimed, w.DeadLettered, w.Alerts, w.Callbacks)
	return w
}

// Scheduler is what a scheduler measures of its loader and publisher.
type Scheduler struct {
	// Claimed counts occurrences the loader claimed from Postgres and put in
	// the due set.
	Claimed prometheus.Counter
	// Moved counts members the publisher moved from the due set to the stream.
	Moved prometheus.Counter
	// Round measures the loader's rounds: every batch claimed from one tick
	// to the next, misfires and recurrences planned included.
	Round prometheus.Histogram
	// Removed counts what retention removed, by kind: jobs, runs, audit,
	// idempotency_keys, sessions.
	Removed *prometheus.CounterVec
	// SLOBreaches counts the breaches of jobs' SLOs by kind (late,
	// silent); SLOBreached is 1 for each job and kind breached now (a
	// series per job breached, gone when it recovers); SLOChecked counts
	// the checks of jobs with an SLO.
	SLOBreaches *prometheus.CounterVec
	SLOBreached *prometheus.GaugeVec
	SLOChecked  prometheus.Counter
}

// NewScheduler creates the scheduler's counters and registers them on reg.
func NewScheduler(reg prometheus.Registerer) *Scheduler {
	s := &Scheduler{
		Claimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tock_loader_claimed_total",
			Help: "Occurrences the loader claimed from Postgres and added to the due set.",
		}),
		Moved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tock_publisher_moved_total",
			Help: "Due-set members the publisher moved to the ready stream.",
		}),
		Round: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tock_loader_round_seconds",
			Help:    "How long the loader leader's rounds take, from the first claim to the last commit.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		Removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tock_retention_removed_total",
			Help: "Rows the scheduler leader's retention removed: finished jobs, their runs, audit entries, idempotency keys, expired dashboard sessions.",
		}, []string{"kind"}),
	}
	s.SLOBreaches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tock_slo_breaches_total",
		Help: "Breaches of jobs' SLOs, by kind: late (an occurrence started later than late_after), silent (none completed for silent_after).",
	}, []string{"kind"})
	s.SLOBreached = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tock_slo_breached",
		Help: "1 for each job whose SLO is broken now, by job and kind; the series goes when it recovers.",
	}, []string{"job_id", "kind"})
	s.SLOChecked = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tock_slo_checks_total",
		Help: "Checks of jobs with an SLO, one per job per sweep.",
	})
	reg.MustRegister(s.Claimed, s.Moved, s.Round, s.Removed, s.SLOBreaches, s.SLOBreached, s.SLOChecked)
	return s
}

// API is what the dashboard measures of its HTTP requests. Routes are echo's
// patterns (/api/v1/jobs/:id), never raw paths, so ids add no series.
type API struct {
	Requests *prometheus.CounterVec
	Duration *prometheus.HistogramVec
}

// NewAPI creates the API's collectors and registers them on reg.
func NewAPI(reg prometheus.Registerer) *API {
	a := &API{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tock_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tock_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and method.",
			Buckets: DurationBuckets,
		}, []string{"route", "method"}),
	}
	reg.MustRegister(a.Requests, a.Duration)
	return a
}

// statsTimeout bounds the Redis round trip of one scrape.
const statsTimeout = 2 * time.Second

var (
	dueDesc     = prometheus.NewDesc("tock_due_set_size", "Members waiting in the Redis due set.", nil, nil)
	streamDesc  = prometheus.NewDesc("tock_stream_length", "Entries in the ready stream, unread and pending.", nil, nil)
	pendingDesc = prometheus.NewDesc("tock_stream_pending", "Stream entries delivered to a worker and not yet acknowledged.", nil, nil)
	heldDesc    = prometheus.NewDesc("tock_held", "Due occurrences held back because their owner or their target host was at its cap on attempts in flight.", nil, nil)
	upDesc      = prometheus.NewDesc("tock_queue_stats_up", "1 when the last scrape read the queue's sizes from Redis, 0 when it could not.", nil, nil)
)

// QueueCollector reports the queue's sizes, read from Redis at scrape time:
// a gauge updated on a timer would be stale by up to its period, and every
// scheduler would poll Redis whether or not anyone scrapes it.
type QueueCollector struct {
	stats func(context.Context) (queue.Stats, error)
}

// NewQueueCollector reads sizes with stats (queue.Shard's Stats).
func NewQueueCollector(stats func(context.Context) (queue.Stats, error)) *QueueCollector {
	return &QueueCollector{stats: stats}
}

// Describe implements prometheus.Collector.
func (q *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- dueDesc
	ch <- streamDesc
	ch <- pendingDesc
	ch <- heldDesc
	ch <- upDesc
}

// Collect implements prometheus.Collector. When Redis does not answer in
// time, the size gauges are left out and tock_queue_stats_up is 0, so a
// dashboard shows a gap rather than a misleading zero.
func (q *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	// Collect has no context of its own: the scrape's timeout is this one.
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	st, err := q.stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(dueDesc, prometheus.GaugeValue, float64(st.Due))
	ch <- prometheus.MustNewConstMetric(streamDesc, prometheus.GaugeValue, float64(st.Ready))
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(st.Held))
}
