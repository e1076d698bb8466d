package jobtype_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/testenv"
)

// sqsRegistry is a registry whose sqs executor reaches f, with the AWS
// SDK's credentials set in the environment as a worker's would be.
func sqsRegistry(t *testing.T, f *testenv.SQS, targets outbound.Options) *jobtype.Registry {
	for _, kv := range f.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	c := outbound.NewClient(targets)
	t.Cleanup(c.CloseIdleConnections)
	return jobtype.NewRegistry(jobtype.Deps{Client: c, Version: version})
}

// TestSQS sends attempts to a local SQS that checks every request's SigV4
// signature. Not parallel: the SDK reads its credentials from the
// environment.
func TestSQS(t *testing.T) {
	f := testenv.NewSQS(t)
	reg := sqsRegistry(t, f, outbound.Options{AllowPrivate: true})

	t.Run("StandardQueue", func(t *testing.T) {
		tk := traced(task(t, jobtype.TypeSQS, jobtype.SQSPayload{QueueURL: f.QueueURL("reminders"), MessageBody: json.RawMessage(`{"order":1234}`)}))
		out := execute(t, reg, tk)
		require.True(t, out.OK, out.Error)
		var res map[string]string
		require.NoError(t, json.Unmarshal([]byte(out.Output), &res))

		msgs := f.Messages(t)
		require.Len(t, msgs, 1)
		m := msgs[0]
		require.Equal(t, res["message_id"], m.ID, "the run's output names the message")
		require.Equal(t, "reminders", m.Queue)
		require.JSONEq(t, `{"order":1234}`, m.Body)
		require.Equal(t, tk.Key, m.Attributes["Idempotency-Key"])
		require.Equal(t, tk.JobID.String(), m.Attributes["X-Tock-Job-Id"])
		require.Equal(t, "2", m.Attributes["X-Tock-Attempt"])
		require.Equal(t, "2026-11-22T09:00:00.000Z", m.Attributes["X-Tock-Scheduled-For"])
		require.Equal(t, traceParent, m.Attributes["traceparent"])
		require.Equal(t, traceState, m.Attributes["tracestate"])
		require.Empty(t, m.DeduplicationID)
	})

	t.Run("FIFOQueueDeduplicatesByKey", func(t *testing.T) {
		tk := task(t, jobtype.TypeSQS, jobtype.SQSPayload{QueueURL: f.QueueURL("orders.fifo"), MessageBody: json.RawMessage(`[1,2]`)})
		first := execute(t, reg, tk)
		again := execute(t, reg, tk) // a redelivered attempt
		require.True(t, first.OK, first.Error)
		require.True(t, again.OK, again.Error)
		require.Equal(t, first.Output, again.Output, "SQS answers the duplicate with the first message")

		var fifo []testenv.SQSMessage
		for _, m := range f.Messages(t) {
			if m.Queue == "orders.fifo" {
				fifo = append(fifo, m)
			}
		}
		require.Len(t, fifo, 1)
		require.Equal(t, tk.Key, fifo[0].DeduplicationID)
		require.Equal(t, tk.JobID.String(), fifo[0].GroupID, "one job's occurrences stay in order")
		require.Contains(t, first.Output, `"sequence_number":"`)
	})

	t.Run("OwnGroupAndDeduplicationIDs", func(t *testing.T) {
		tk := task(t, jobtype.TypeSQS, jobtype.SQSPayload{QueueURL: f.QueueURL("mine.fifo"), MessageBody: json.RawMessage(`1`),
			MessageGroupID: "customer-1234", DeduplicationID: "invoice-77"})
		out := execute(t, reg, tk)
		require.True(t, out.OK, out.Error)
		msgs := f.Messages(t)
		m := msgs[len(msgs)-1]
		require.Equal(t, "customer-1234", m.GroupID)
		require.Equal(t, "invoice-77", m.DeduplicationID)
	})

	t.Run("RefusalIsTheAttemptsError", func(t *testing.T) {
		tk := task(t, jobtype.TypeSQS, jobtype.SQSPayload{QueueURL: "http://" + f.Host() + "/000000000000/x", MessageBody: json.RawMessage(`1`)})
		f.SetFailing(true)
		out := execute(t, reg, tk)
		f.SetFailing(false)
		require.False(t, out.OK)
		require.Contains(t, out.Error, "InternalError")
	})

	t.Run("TheFakeChecksTheSignature", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
		wrong := jobtype.NewRegistry(jobtype.Deps{Client: outbound.NewClient(outbound.Options{AllowPrivate: true}), Version: version})
		out := execute(t, wrong, task(t, jobtype.TypeSQS, jobtype.SQSPayload{QueueURL: f.QueueURL("reminders"), MessageBody: json.RawMessage(`1`)}))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "InvalidSecurity")
		require.Error(t, f.Err(), "the fake saw a bad signature")
		f.Forget()
	})

	t.Run("GuardAppliesToTheQueueHost", func(t *testing.T) {
		guarded := jobtype.NewRegistry(jobtype.Deps{Client: outbound.NewClient(outbound.Options{}), Version: version})
		out := execute(t, guarded, task(t, jobtype.TypeSQS, jobtype.SQSPayload{QueueURL: f.QueueURL("reminders"), MessageBody: json.RawMessage(`1`)}))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "target address not allowed")
		require.NotContains(t, out.Error, "loopback")
		require.NotContains(t, out.Error, "127.0.0.1")
	})
}

func TestSQSPayloads(t *testing.T) {
	t.Parallel()
	local := outbound.Options{AllowPrivate: true, SQSHosts: []string{"127.0.0.1:9324"}}
	for _, tt := range []struct {
		name    string
		raw     string
		targets outbound.Options
		field   string
	}{
		{"AWS", `{"queue_url":"https://sqs.eu-central-1.amazonaws.com/123456789012/reminders","message_body":{"a":1}}`, outbound.Options{}, ""},
		{"AWSFIFO", `{"queue_url":"https://sqs.us-east-1.amazonaws.com/123456789012/o.fifo","message_body":"x","message_group_id":"g","deduplication_id":"d"}`, outbound.Options{}, ""},
		{"Legacy", `{"queue_url":"https://eu-west-1.queue.amazonaws.com/123456789012/q","message_body":1}`, outbound.Options{}, ""},
		{"AllowedLocal", `{"queue_url":"http://127.0.0.1:9324/000000000000/q","message_body":1}`, local, ""},
		{"AWSOverHTTP", `{"queue_url":"http://sqs.eu-central-1.amazonaws.com/123456789012/q","message_body":1}`, outbound.Options{}, "payload.queue_url"},
		{"OtherHost", `{"queue_url":"https://collector.example.com/123456789012/q","message_body":1}`, outbound.Options{}, "payload.queue_url"},
		{"LocalNotAllowed", `{"queue_url":"http://127.0.0.1:9324/000000000000/q","message_body":1}`, outbound.Options{AllowPrivate: true}, "payload.queue_url"},
		{"AllowedButPrivate", `{"queue_url":"http://127.0.0.1:9324/000000000000/q","message_body":1}`, outbound.Options{SQSHosts: []string{"127.0.0.1:9324"}}, "payload.queue_url"},
		{"PortOutOfRange", `{"queue_url":"https://sqs.eu-central-1.amazonaws.com:99999/1/q","message_body":1}`, outbound.Options{}, "payload.queue_url"},
		{"NoQueueName", `{"queue_url":"https://sqs.eu-central-1.amazonaws.com/123456789012","message_body":1}`, outbound.Options{}, "payload.queue_url"},
		{"QueryString", `{"queue_url":"https://sqs.eu-central-1.amazonaws.com/1/q?x=1","message_body":1}`, outbound.Options{}, "payload.queue_url"},
		{"NoBody", `{"queue_url":"https://sqs.eu-central-1.amazonaws.com/1/q"}`, outbound.Options{}, "payload.message_body"},
		{"DedupOnStandard", `{"queue_url":"https://sqs.eu-central-1.amazonaws.com/1/q","message_body":1,"deduplication_id":"d"}`, outbound.Options{}, "payload.deduplication_id"},
		{"GroupWithSpace", `{"queue_url":"https://sqs.eu-central-1.amazonaws.com/1/q.fifo","message_body":1,"message_group_id":"a b"}`, outbound.Options{}, "payload.message_group_id"},
		{"UnknownField", `{"queue_url":"https://sqs.eu-central-1.amazonaws.com/1/q","message_body":1,"delay":3}`, outbound.Options{}, "payload"},
	} {
		t.Run(tt.name, func(t *testing.T) { checkPayload(t, jobtype.TypeSQS, tt.raw, tt.targets, tt.field) })
	}
}
