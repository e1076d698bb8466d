// Alerting: a job's notify is sent once per event, after the outcome that
// raised it is recorded, through the job types' own executors. A failing
// alert is logged and counted, never retried, and never holds up the
// recorder: alerts run on goroutines of their own, at most maxAlerts at once.

package main

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/store"
)

// maxAlerts bounds the alerts in flight in one worker; more are dropped
// (and counted), so a flood of failures cannot grow without bound.
const maxAlerts = 64

// alertTimeout bounds one alert's delivery.
const alertTimeout = 10 * time.Second

// alert sends the alerts a recorded batch raises: failed,
// permanently_failed and completed from the outcomes, recovered from a completed attempt
// whose job's previous attempt failed (one query for the batch, only when
// some job asks for it), and paused for the jobs autoPause paused.
func (c *completer) alert(ctx context.Context, batch []*item, results []store.Result, paused []uuid.UUID) {
	var recovering []job.Occurrence
	for i, it := range batch {
		n := it.job.Notify
		if n != nil && n.Callback != nil {
			continue // sent from the outbox (callbacks.go)
		}
		switch results[i].Status {
		case job.RunFailed:
			if n.Wants(job.NotifyFailed) {
				c.sendAlert(it, job.NotifyFailed, results[i])
			}
		case job.RunPermanentlyFailed:
			if n.Wants(job.NotifyPermanentlyFailed) {
				c.sendAlert(it, job.NotifyPermanentlyFailed, results[i])
			}
		case job.RunCompleted:
			if n.Wants(job.NotifyCompleted) {
				c.sendAlert(it, job.NotifyCompleted, results[i])
			}
			if n.Wants(job.NotifyRecovered) {
				recovering = append(recovering, it.msg.Occurrence)
			}
		}
	}
	if len(recovering) > 0 {
		prev, err := c.w.Store.PreviousOutcomes(ctx, recovering)
		if err != nil {
			c.w.Log.Warn("alert_lookup_failed", zap.Int("runs", len(recovering)), zap.Error(err))
			c.w.Metrics.Alerts.WithLabelValues(string(job.NotifyRecovered), "failed").Add(float64(len(recovering)))
		}
		for i, it := range batch {
			if results[i].Status != job.RunCompleted || !it.job.Notify.Wants(job.NotifyRecovered) {
				continue
			}
			if st := prev[it.msg.Occurrence.Member()]; st == job.RunFailed || st == job.RunPermanentlyFailed {
				c.sendAlert(it, job.NotifyRecovered, results[i])
			}
		}
	}
	for _, id := range paused {
		for i, it := range batch {
			if it.msg.Occurrence.JobID == id && it.job.Notify.Wants(job.NotifyPaused) {
				c.sendAlert(it, job.NotifyPaused, results[i])
				break
			}
		}
	}
}

// sendAlert delivers one alert on its own goroutine, or drops it when
// maxAlerts are in flight.
func (c *completer) sendAlert(it *item, e job.NotifyEvent, res store.Result) {
	w, aj, occ := c.w, it.job, it.msg.Occurrence
	a := jobtype.Alert{Event: e, At: res.FinishedAt.UTC(),
		Job: jobtype.AlertJob{ID: occ.JobID, Name: aj.Name, Type: aj.Type},
		Run: jobtype.AlertRun{ScheduledFor: occ.ScheduledFor, Attempt: occ.Attempt, Status: res.Status, Error: res.Error}}
	t, payload, err := jobtype.AlertTask(aj.Notify, a)
	if err != nil {
		w.Log.Warn("alert_unbuildable", zap.String("job_id", occ.JobID.String()), zap.Error(err))
		w.Metrics.Alerts.WithLabelValues(string(e), "failed").Inc()
		return
	}
	if aj.SecretsErr != nil {
		w.Log.Error("alert_secrets_unavailable", zap.String("job_id", occ.JobID.String()), zap.String("event", string(e)), zap.Error(aj.SecretsErr))
		w.Metrics.Alerts.WithLabelValues(string(e), "failed").Inc()
		return
	}
	if aj.SigningErr != nil {
		w.Log.Error("alert_not_signed", zap.String("job_id", occ.JobID.String()), zap.String("event", string(e)), zap.Error(aj.SigningErr))
		w.Metrics.Alerts.WithLabelValues(string(e), "failed").Inc()
		return
	}
	select {
	case c.alerts <- struct{}{}:
	default:
		w.Log.Warn("alert_dropped", zap.String("job_id", occ.JobID.String()), zap.String("event", string(e)))
		w.Metrics.Alerts.WithLabelValues(string(e), "dropped").Inc()
		return
	}
	task := jobtype.Task{JobID: occ.JobID, Owner: aj.Owner, Name: aj.Name, Type: t,
		ScheduledFor: occ.ScheduledFor, Attempt: occ.Attempt,
		Key: "alert/" + string(e) + "/" + occ.Key() + "/" + strconv.Itoa(occ.Attempt), Payload: payload, Timeout: alertTimeout,
		SigningSecret: aj.SigningSecret, PreviousSigningSecret: aj.PreviousSigningSecret}
	go func() {
		defer func() { <-c.alerts }()
		ctx, cancel := context.WithTimeout(context.Background(), alertTimeout)
		defer cancel()
		out := w.Runner.Execute(ctx, task)
		if !out.OK {
			// The error names the destination's answer, not its URL.
			w.Log.Warn("alert_failed", zap.String("job_id", occ.JobID.String()), zap.String("event", string(e)),
				zap.Int("status_code", out.StatusCode))
			w.Metrics.Alerts.WithLabelValues(string(e), "failed").Inc()
			return
		}
		w.Metrics.Alerts.WithLabelValues(string(e), "sent").Inc()
	}()
}
