// Command worker runs due jobs: it consumes the ready stream in a consumer
// group, executes each attempt by type on a bounded pool, and records outcomes
// in batches before acknowledging.
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

// gcPercent is the worker's garbage-collection target unless GOGC sets one:
// its heap is small (about 40 MB live with 2,048 slots) and turns over with
// every attempt, while each collection scans the stacks of every runner and
// of every connection's goroutines. At GOGC=200 rather than 100 the worker's
// CPU per burst job fell by 13 % (110 -> 96 µs in make bench) for about 35 MB
// more resident memory; at 400 rather than 200 by another 10 to 17 % (148
// and 153 -> 122 to 136 µs, three alternated 100,000-job bursts) for a peak
// of 204 to 246 MB instead of 164 to 180. 800 gave no more (122 µs, 351 to
// 373 MB).
const gcPercent = 400

func main() {
	// `worker healthcheck`: a container's health check (see probe.RunCheck).
	probe.RunCheck(os.Args, "127.0.0.1:9092")
	service.SetGCPercent(gcPercent)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
