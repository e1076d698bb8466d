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

	"github.com/tockhq/tock/pkg/service"
)

// gcPercent is the dashboard's garbage-collection target unless GOGC sets
// one: a bulk create decodes and validates thousands of jobs whose garbage
// dies with the request, and at the default (100) the collector's assists
// were a tenth of the dashboard's CPU while ingesting. 200 took the
// dashboard from 56-65 to 51-55 µs a job (three alternated runs of 100,000
// bulk and 20,000 single creates), for a peak of 138-155 MB resident
// instead of 106-113. 400 rather than 200, measured on the bulk API alone
// (200,000 jobs, three alternated pairs): 54,000 to 66,000 jobs/s against
// 43,000 to 47,000, 17.5-21 against 24-27 µs a job, for a peak of 307-334
// MB instead of 171-205.
const gcPercent = 400

func main() {
	service.SetGCPercent(gcPercent)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}
