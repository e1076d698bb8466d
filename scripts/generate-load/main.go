// Command generate-load creates many jobs over a range of minutes, with a
// per-minute profile (uniform, or heavy minutes), through the bulk API or
// straight into Postgres with COPY, and prints what it created. It is how the
// scheduler is put under the load it was tuned for.
//
//	go run ./scripts/generate-load -h
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "generate-load:", err)
		os.Exit(1)
	}
}

// run parses the flags, then plans and creates the jobs. getenv supplies the
// defaults of -token and -database.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	return generate(ctx, cfg, stdout, stderr)
}
