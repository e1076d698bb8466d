// Command dashboard serves tock's HTTP JSON API (and, later, its browser UI):
// it validates jobs, writes them to Postgres and puts the ones due soon
// straight into Redis. It keeps no state, so any number can run side by side.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tockhq/tock/pkg/probe"
	"github.com/tockhq/tock/pkg/service"
)

// gcPercent is the dashboard's garbage-collection target unless GOGC sets
// one: a bulk create decodes and validates thousands of jobs whose garbage
// dies with the request, and at the default (100) the collector's assists
// were a tenth of the dashboard's CPU while ingesting. Three alternated
// ingest runs (100,000 bulk and 20,000 single creates) put the dashboard at
// 51-55 µs a job at 200 against 56-65 at 100 and 49-61 at 400, for a peak
// of 138-155 MB resident against 106-113 at 100 and 189-224 at 400.
const gcPercent = 200

func main() {
	// `dashboard healthcheck`: a container's health check (see probe.RunCheck).
	probe.RunCheck(os.Args, "127.0.0.1:9090")
	service.SetGCPercent(gcPercent)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}
