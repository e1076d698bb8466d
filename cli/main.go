// Command tock is the command line of tock, the distributed job scheduler:
// jobs and runs at a prompt, schedule previews, and schedules as code
// (tock apply -f schedules.yaml), all through the Go SDK.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time (-X main.version=...).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
