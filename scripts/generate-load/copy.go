package main

import (
	"context"
	"fmt"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/store"
)

// copySink writes jobs straight into Postgres with COPY, built and validated
// as the API builds them and owned by the bootstrap administrator. They are
// not audited: store.Audit's zero Actor is meant for load generators. The
// scheduler's loader picks up those due within its horizon at its next round
// (TOCK_LOAD_INTERVAL).
type copySink struct {
	store  *store.Store
	limits jobspec.Limits
	now    func() time.Time
}

func (c *copySink) create(ctx context.Context, items []Item) error {
	now := c.now()
	jobs := make([]*job.Job, len(items))
	for i, it := range items {
		j, err := it.Spec.Build(store.BootstrapAdmin, now, c.limits)
		if err != nil {
			return fmt.Errorf("build job %q: %w", it.Spec.Name, err)
		}
		jobs[i] = j
	}
	return c.store.CreateJobs(ctx, jobs, store.Create{})
}
