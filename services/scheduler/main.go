// Command scheduler moves due jobs from Postgres to Redis and from the due set
// to the ready stream: one loader leader at a time, a publisher on every
// instance, and the leader's reconciler and partition upkeep.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tockhq/tock/pkg/probe"
)

func main() {
	// `scheduler healthcheck`: a container's health check (see probe.RunCheck).
	probe.RunCheck(os.Args, "127.0.0.1:9091")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
}
