package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/testenv"
	tock "github.com/tockhq/tock/sdk/go"
)

// The examples below are the SDK's examples run on the real services: each
// starts the dashboard (with a scheduler and a worker when a job must run)
// on a database of its own, and stops it at the end. sdk/go's own examples
// show the same calls for godoc, against a fake.

// exampleCluster starts the real services for one example; stop removes
// them and their database. An example cannot skip, so without Postgres and
// Redis it says so and its output does not match.
func exampleCluster(schedulers, workers int) (c *cluster.Cluster, stop func()) {
	logs, err := os.MkdirTemp("", "tock-example-")
	if err != nil {
		panic(err)
	}
	c, err = cluster.Start(context.Background(), cluster.Options{BinDir: binDir, AdminURL: testenv.DatabaseURL(),
		RedisURL: testenv.RedisURL(), LogDir: logs, Schedulers: schedulers, Workers: workers})
	if err != nil {
		os.RemoveAll(logs)
		fmt.Println("cannot start the services:", err)
		return nil, nil
	}
	return c, func() { c.Stop(); os.RemoveAll(logs) }
}

// Create a webhook job that runs at once, and read its run once the worker
// has recorded it.
func Example_createAndRun() {
	c, stop := exampleCluster(1, 1)
	if c == nil {
		return
	}
	defer stop()
	target := cluster.NewTarget() // a local server standing in for yours
	defer target.Close()
	ctx := context.Background()

	client := tock.New(c.APIURL, c.Token)
	job, err := client.Jobs.Create(ctx, tock.JobSpec{
		Name:    "hello",
		Type:    "webhook",
		Delay:   "0s",
		Payload: tock.WebhookPayload{URL: target.URL + "/hello", Method: "POST"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created:", job.Status)

	for range 300 {
		page, err := client.Runs.List(ctx, tock.RunFilter{Job: job.ID, Status: "completed"})
		if err != nil {
			fmt.Println(err)
			return
		}
		if len(page.Runs) > 0 {
			r := page.Runs[0]
			fmt.Println("run:", r.Status, "attempt", r.Attempt, r.JobName)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Output:
	// created: scheduled
	// run: completed attempt 1 hello
}

// Keep a recurring job under your own key: the first PUT creates it, the
// next replaces its definition in place. Refusals are *tock.Error values
// that name the field at fault.
func Example_keysAndErrors() {
	c, stop := exampleCluster(0, 0)
	if c == nil {
		return
	}
	defer stop()
	ctx := context.Background()
	client := tock.New(c.APIURL, c.Token)

	spec := tock.JobSpec{
		Name:     "weekly report",
		Type:     "ping",
		Schedule: &tock.Schedule{Cron: "0 9 * * 1", Timezone: "Europe/Berlin"},
		Payload:  tock.PingPayload{URL: "https://example.com/report"},
	}
	first, created, err := client.Jobs.Put(ctx, "weekly-report", spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created:", created)
	spec.Schedule.Cron = "0 10 * * 1"
	second, created, err := client.Jobs.Put(ctx, "weekly-report", spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created:", created, "same id:", first.ID == second.ID, "cron:", second.Schedule.Cron)

	spec.Schedule.Cron = "0 25 * * 1"
	_, _, err = client.Jobs.Put(ctx, "weekly-report", spec)
	var e *tock.Error
	if errors.As(err, &e) {
		fmt.Println("refused:", e.Status, e.Code, e.Field)
	}

	_, err = client.Jobs.Get(ctx, "0190c0de-0000-7000-8000-000000000000")
	fmt.Println("not found:", tock.IsNotFound(err))
	// Output:
	// created: true
	// created: false same id: true cron: 0 10 * * 1
	// refused: 400 invalid schedule.cron
	// not found: true
}
