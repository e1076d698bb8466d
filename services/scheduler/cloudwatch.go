package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
)

// PutMetricDataAPI is the one CloudWatch call the backlog reporter makes.
// *cloudwatch.Client satisfies it.
type PutMetricDataAPI interface {
	PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error)
}

// CloudWatch is the backlog reporter. ECS scales the worker service on the
// ready streams' backlog, which only Redis knows. So while this instance
// leads (holds the loader lock), it reads the queue's sizes every Interval
// and puts them to CloudWatch. Only the leader reports, so each
// deployment (Prefix) has one series and not one per scheduler.
type CloudWatch struct {
	// Namespace is the metrics' CloudWatch namespace, such as "Tock".
	Namespace string
	// Prefix is TOCK_REDIS_PREFIX, the metrics' one dimension, "Prefix",
	// which keeps deployments that share an account apart.
	Prefix   string
	Interval time.Duration
	// Stats reads the queue's sizes, summed over its shards if it has several.
	Stats func(context.Context) (queue.Stats, error)
	// Leading says whether this instance holds the loader lock now.
	Leading func() bool
	Client  PutMetricDataAPI
	Log     *zap.Logger
	// Clock stamps the data points; nil means time.Now.
	Clock func() time.Time
}

// NewCloudWatchClient returns a CloudWatch client with the SDK's default
// credential chain (the ECS task role in production) and region
// (AWS_REGION). A missing region is reported now, at start-up, rather than
// on every put.
func NewCloudWatchClient(ctx context.Context) (*cloudwatch.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("load aws config: no region: set AWS_REGION")
	}
	return cloudwatch.NewFromConfig(cfg), nil
}

// Run reports every Interval until ctx ends. Nothing depends on the metrics
// for correctness, so a failure is only logged, once per outage.
func (c *CloudWatch) Run(ctx context.Context) {
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !c.Leading() {
			continue
		}
		err := c.put(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			c.Log.Warn("cloudwatch_put_failed", zap.Error(err))
			failing = true
		case err == nil:
			failing = false
		}
	}
}

// cloudWatchTimeout bounds one report, so a stalled connection cannot stop
// reporting; ticks missed meanwhile are dropped, not queued.
const cloudWatchTimeout = 5 * time.Second

// put reads the queue's sizes and puts them in one PutMetricData call.
//
// StreamBacklog is Stats.Ready, the ready streams' length: workers XDEL each
// entry as they XACK it, so a stream holds exactly the entries not yet
// acknowledged, unread or pending.
func (c *CloudWatch) put(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, cloudWatchTimeout)
	defer cancel()
	st, err := c.Stats(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	if c.Clock != nil {
		now = c.Clock()
	}
	dims := []types.Dimension{{Name: aws.String("Prefix"), Value: aws.String(c.Prefix)}}
	datum := func(name string, v int64) types.MetricDatum {
		return types.MetricDatum{
			MetricName: aws.String(name),
			Dimensions: dims,
			Timestamp:  aws.Time(now),
			Unit:       types.StandardUnitCount,
			Value:      aws.Float64(float64(v)),
		}
	}
	_, err = c.Client.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{
		Namespace: aws.String(c.Namespace),
		MetricData: []types.MetricDatum{
			datum("StreamBacklog", st.Ready),
			datum("StreamPending", st.Pending),
			datum("DueSetSize", st.Due),
			datum("Held", st.Held),
		},
	})
	if err != nil {
		return fmt.Errorf("put metric data: %w", err)
	}
	return nil
}
