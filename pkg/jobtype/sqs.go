package jobtype

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
)

// TypeSQS is a message sent to an Amazon SQS queue.
const TypeSQS job.Type = "sqs"

// SQS is the sqs job type.
var SQS = Kind{
	Type:    TypeSQS,
	Summary: "sends the message body to an Amazon SQS queue, signed with the worker's AWS credentials",
	Example: SQSPayload{QueueURL: "https://sqs.eu-central-1.amazonaws.com/123456789012/reminders", MessageBody: json.RawMessage(`{"order":1234}`)},
	Check:   checkSQS,
	New:     func(d Deps) Executor { return typed(TypeSQS, (&sqsExecutor{client: d.Client, version: d.Version}).run) },
}

// SQSPayload is the payload of an sqs job. MessageBody is sent as its JSON
// text. A FIFO queue (a name ending in .fifo) gets the job's id as message
// group and the occurrence's idempotency key as deduplication id unless the
// payload names its own.
type SQSPayload struct {
	QueueURL        string          `json:"queue_url"`
	MessageBody     json.RawMessage `json:"message_body"`
	MessageGroupID  string          `json:"message_group_id,omitempty"`
	DeduplicationID string          `json:"deduplication_id,omitempty"`
}

var (
	// sqsQueuePath is /<account>/<queue name> of a queue URL.
	sqsQueuePath = regexp.MustCompile(`^/[A-Za-z0-9_-]{1,64}/([A-Za-z0-9_-]{1,75}(\.fifo)?|[A-Za-z0-9_-]{1,80})$`)
	// sqsAWSHost matches Amazon's SQS endpoints, with the region.
	sqsAWSHost = regexp.MustCompile(`^(?:sqs(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?|([a-z0-9-]+)\.queue\.amazonaws\.com|vpce-[a-z0-9-]+\.sqs\.([a-z0-9-]+)\.vpce\.amazonaws\.com|queue\.amazonaws\.com)$`)
	// sqsID is a message group or deduplication id: 1 to 128 printable
	// ASCII characters other than space.
	sqsID = regexp.MustCompile(`^[!-~]{1,128}$`)
)

// sqsRegion is the region of an Amazon SQS endpoint host, "" for another
// host (a local SQS), or false if the host is neither Amazon's nor one the
// operator allows.
func sqsRegion(u *url.URL, allowed []string) (string, bool) {
	host := strings.ToLower(u.Hostname())
	if m := sqsAWSHost.FindStringSubmatch(host); m != nil {
		if u.Scheme != "https" {
			return "", false
		}
		for _, r := range m[1:] {
			if r != "" {
				return r, true
			}
		}
		return "us-east-1", true // queue.amazonaws.com, the legacy endpoint
	}
	return "", slices.Contains(allowed, strings.ToLower(u.Host)) || slices.Contains(allowed, host)
}

func checkSQS(raw json.RawMessage, targets outbound.Options) error {
	var p SQSPayload
	if err := decodeStrict(raw, &p); err != nil {
		return invalid("payload", "%s", err)
	}
	u, err := checkBrokerURL("payload.queue_url", p.QueueURL, targets, "https", "http")
	if err != nil {
		return err
	}
	if _, ok := sqsRegion(u, targets.SQSHosts); !ok {
		return invalid("payload.queue_url", "must be an Amazon SQS queue URL such as https://sqs.eu-central-1.amazonaws.com/123456789012/reminders (an operator can allow another host with TOCK_SQS_HOSTS)")
	}
	if !sqsQueuePath.MatchString(u.EscapedPath()) || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return invalid("payload.queue_url", "must end in /<account>/<queue name>, the name at most 80 letters, digits, - or _ (a FIFO queue's ending in .fifo)")
	}
	if err := checkBody("payload.message_body", p.MessageBody); err != nil {
		return err
	}
	fifo := strings.HasSuffix(u.Path, ".fifo")
	if p.MessageGroupID != "" && !sqsID.MatchString(p.MessageGroupID) {
		return invalid("payload.message_group_id", "must be 1 to 128 printable ASCII characters without spaces")
	}
	switch {
	case p.DeduplicationID != "" && !fifo:
		return invalid("payload.deduplication_id", "applies only to a FIFO queue (a name ending in .fifo)")
	case p.DeduplicationID != "" && !sqsID.MatchString(p.DeduplicationID):
		return invalid("payload.deduplication_id", "must be 1 to 128 printable ASCII characters without spaces")
	}
	return nil
}

// sqsExecutor sends sqs jobs through one SQS client per worker. Its HTTP
// client is the guarded outbound one; the credentials come from the AWS
// SDK's default chain (environment, shared files, web identity, the
// instance's role), loaded at the first sqs job.
type sqsExecutor struct {
	client  *http.Client
	version string

	once   sync.Once
	sqs    *sqs.Client
	region string
	err    error
}

// sqsConfigTimeout bounds loading the SDK's configuration.
const sqsConfigTimeout = 10 * time.Second

func (e *sqsExecutor) load() (*sqs.Client, string, error) {
	e.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sqsConfigTimeout)
		defer cancel()
		// The credential providers (the instance metadata service is
		// link-local) use the SDK's own HTTP client; the queues the guarded one.
		cfg, err := config.LoadDefaultConfig(ctx, config.WithAppID(strings.ReplaceAll(userAgent(e.version), "/", "-")))
		if err != nil {
			e.err = err
			return
		}
		e.region = cfg.Region
		e.sqs = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			if e.client != nil {
				o.HTTPClient = e.client
			}
			// tock's retry policy owns retries: one attempt is one request.
			o.RetryMaxAttempts = 1
		})
	})
	return e.sqs, e.region, e.err
}

// run sends one attempt to the payload's queue, at the queue URL's own
// endpoint, with tock's headers (Idempotency-Key, X-Tock-Job-Id,
// X-Tock-Scheduled-For, X-Tock-Attempt) as string message attributes.
// Output records the message id SQS gave, and a FIFO queue's sequence
// number.
func (e *sqsExecutor) run(ctx context.Context, t Task, p SQSPayload) Outcome {
	u, err := url.Parse(p.QueueURL)
	if err != nil {
		return failure("invalid sqs queue_url")
	}
	start := time.Now()
	ctx, cancel, limit := withTimeout(ctx, t, start)
	defer cancel()
	client, region, err := e.load()
	if err != nil {
		return failure("could not load the worker's AWS configuration: %s", err)
	}
	// The queue's region when its URL names one; otherwise (a local SQS)
	// the worker's, or us-east-1.
	if r, _ := sqsRegion(u, nil); r != "" {
		region = r
	} else if region == "" {
		region = "us-east-1"
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(p.QueueURL),
		MessageBody:       aws.String(string(p.MessageBody)),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{},
	}
	for k, v := range tockHeaders(t) {
		in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	if p.MessageGroupID != "" {
		in.MessageGroupId = aws.String(p.MessageGroupID)
	}
	if strings.HasSuffix(u.Path, ".fifo") {
		in.MessageDeduplicationId = aws.String(cmp.Or(p.DeduplicationID, t.Key))
		in.MessageGroupId = aws.String(cmp.Or(p.MessageGroupID, t.JobID.String()))
	}
	endpoint := u.Scheme + "://" + u.Host
	out, err := client.SendMessage(ctx, in, func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.Region = region
	})
	if err != nil {
		var api smithy.APIError
		if errors.As(err, &api) && ctx.Err() == nil {
			return Outcome{Latency: time.Since(start), Error: clean([]byte("SQS refused the message: "+api.ErrorCode()+": "+api.ErrorMessage()), OutputLimit)}
		}
		return brokerFailure(ctx, "send to SQS", err, limit, start)
	}
	res := map[string]string{"message_id": aws.ToString(out.MessageId)}
	if out.SequenceNumber != nil {
		res["sequence_number"] = *out.SequenceNumber
	}
	b, _ := json.Marshal(res)
	return Outcome{OK: true, Latency: time.Since(start), Output: string(b)}
}
