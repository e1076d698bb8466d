// Alerting: a job's notify is sent once per event, after the outcome that
// raised it is recorded, through the job types' own executors. A failing
// alert is logged and counted, never retried, and never holds up the
// recorder: alerts run on goroutines of their own, at most maxAlerts at once.

package main

import (
	"context"
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

// alert sends the alerts a recorded batch raises: failed and
// permanently_failed from the outcomes, recovered from a completed attempt
// whose job's previous attempt failed (one query for the batch, only when
// some job asks for it), and paused for the jobs autoPause paused.
func (c *Consumer) alert(ctx context.Context, batch []result, results []store.Result, paused []uuid.UUID) {
	var recovering []job.Occurrence
	for i, r := range batch {
		n := r.started.Notify
		switch results[i].Status {
		case job.RunFailed:
			if n.Wants(job.NotifyFailed) {
				c.sendAlert(r.started, job.NotifyFailed, results[i])
			}
		case job.RunPermanentlyFailed:
			if n.Wants(job.NotifyPermanentlyFailed) {
				c.sendAlert(r.started, job.NotifyPermanentlyFailed, results[i])
			}
		case job.RunCompleted:
			if n.Wants(job.NotifyRecovered) {
				recovering = append(recovering, r.msg.Occurrence)
			}
		}
	}
	if len(recovering) > 0 {
		prev, err := c.Store.PreviousOutcomes(ctx, recovering)
		if err != nil {
			c.Log.Warn("alert_lookup_failed", zap.Int("runs", len(recovering)), zap.Error(err))
			c.Metrics.Alerts.WithLabelValues(string(job.NotifyRecovered), "failed").Add(float64(len(recovering)))
		}
		for i, r := range batch {
			if results[i].Status != job.RunCompleted || !r.started.Notify.Wants(job.NotifyRecovered) {
				continue
			}
			if st := prev[r.msg.Occurrence.Member()]; st == job.RunFailed || st == job.RunPermanentlyFailed {
				c.sendAlert(r.started, job.NotifyRecovered, results[i])
			}
		}
	}
	for _, id := range paused {
		for i, r := range batch {
			if r.started.Run.JobID == id && r.started.Notify.Wants(job.NotifyPaused) {
				c.sendAlert(r.started, job.NotifyPaused, results[i])
				break
			}
		}
	}
}

// sendAlert delivers one alert on its own goroutine, or drops it when
// maxAlerts are in flight.
func (c *Consumer) sendAlert(st store.Started, e job.NotifyEvent, res store.Result) {
	a := jobtype.Alert{Event: e, At: res.FinishedAt.UTC(),
		Job: jobtype.AlertJob{ID: st.Run.JobID, Name: st.Name, Type: st.Type},
		Run: jobtype.AlertRun{ScheduledFor: st.Run.ScheduledFor, Attempt: st.Run.Attempt, Status: res.Status, Error: res.Error}}
	t, payload, err := jobtype.AlertTask(st.Notify, a)
	if err != nil {
		c.Log.Warn("alert_unbuildable", zap.String("job_id", st.Run.JobID.String()), zap.Error(err))
		c.Metrics.Alerts.WithLabelValues(string(e), "failed").Inc()
		return
	}
	if st.SecretsErr != nil {
		c.Log.Error("alert_secrets_unavailable", zap.String("job_id", st.Run.JobID.String()), zap.String("event", string(e)), zap.Error(st.SecretsErr))
		c.Metrics.Alerts.WithLabelValues(string(e), "failed").Inc()
		return
	}
	if st.SigningErr != nil {
		c.Log.Error("alert_not_signed", zap.String("job_id", st.Run.JobID.String()), zap.String("event", string(e)), zap.Error(st.SigningErr))
		c.Metrics.Alerts.WithLabelValues(string(e), "failed").Inc()
		return
	}
	select {
	case c.alerts <- struct{}{}:
	default:
		c.Log.Warn("alert_dropped", zap.String("job_id", st.Run.JobID.String()), zap.String("event", string(e)))
		c.Metrics.Alerts.WithLabelValues(string(e), "dropped").Inc()
		return
	}
	task := jobtype.Task{JobID: st.Run.JobID, Owner: st.Run.Owner, Name: st.Name, Type: t,
		ScheduledFor: st.Run.ScheduledFor, Attempt: st.Run.Attempt,
		Key: "alert/" + string(e) + "/" + st.Run.ID.String(), Payload: payload, Timeout: alertTimeout,
		SigningSecret: st.SigningSecret, PreviousSigningSecret: st.PreviousSigningSecret}
	go func() {
		defer func() { <-c.alerts }()
		ctx, cancel := context.WithTimeout(context.Background(), alertTimeout)
		defer cancel()
		out := c.Runner.Execute(ctx, task)
		if !out.OK {
			// The error names the destination's answer, not its URL.
			c.Log.Warn("alert_failed", zap.String("job_id", st.Run.JobID.String()), zap.String("event", string(e)),
				zap.Int("status_code", out.StatusCode))
			c.Metrics.Alerts.WithLabelValues(string(e), "failed").Inc()
			return
		}
		c.Metrics.Alerts.WithLabelValues(string(e), "sent").Inc()
	}()
}
