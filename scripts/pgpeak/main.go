// Command pgpeak runs a command while it samples how many Postgres
// connections the project's tests hold, and reports the most it saw: `make
// test` runs under it, so that CI proves the connection budget the isolation
// issue set (at most 40 at once) on every run.
//
//	go run ./scripts/pgpeak -max 40 -- go test ./...
//
// It counts client backends connected to the databases tests use (test,
// postgres, and the end-to-end clusters' tock_e2e_*), not other databases of
// the same server, and not its own connection. It exits with the command's
// status, or 1 when the command passed but the peak was above -max.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const countSQL = `SELECT count(*) FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
  AND (datname IN ('test', 'postgres') OR datname LIKE 'tock\_e2e\_%')`

func main() {
	url := flag.String("url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "the Postgres server to watch")
	most := flag.Int("max", 0, "fail when more connections than this were in use at once (0: only report)")
	every := flag.Duration("every", 50*time.Millisecond, "sampling interval")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: pgpeak [-max N] -- command [args...]")
		os.Exit(2)
	}
	os.Exit(run(*url, *most, *every, flag.Args()))
}

func run(url string, most int, every time.Duration, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgpeak: cannot watch Postgres, running the command unwatched: %v\n", err)
	}

	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "pgpeak: %v\n", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	peak, peakAt, began := 0, time.Duration(0), time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var cmdErr error
wait:
	for {
		select {
		case cmdErr = <-done:
			break wait
		case <-tick.C:
			if conn == nil {
				continue
			}
			var n int
			if err := conn.QueryRow(ctx, countSQL).Scan(&n); err == nil && n > peak {
				peak, peakAt = n, time.Since(began)
			}
		}
	}
	code := 0
	if cmdErr != nil {
		code = 1
		if ee := (*exec.ExitError)(nil); errors.As(cmdErr, &ee) && ee.ExitCode() > 0 {
			code = ee.ExitCode()
		}
	}
	if conn == nil {
		return code
	}
	_ = conn.Close(context.Background())
	fmt.Printf("pgpeak: at most %d Postgres connections in use at once by the tests (%s in)\n", peak, peakAt.Round(time.Second))
	if code == 0 && most > 0 && peak > most {
		fmt.Fprintf(os.Stderr, "pgpeak: %d connections at once is over the budget of %d (docs/operations.md, Postgres connections)\n", peak, most)
		return 1
	}
	return code
}
