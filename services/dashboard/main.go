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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}
