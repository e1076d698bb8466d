package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// listenBodyLimit is the most of a request's body listen prints.
const listenBodyLimit = 64 << 10

// listenCmd runs a local HTTP receiver that prints every request a job
// sends it: a webhook's target of one's own, for trying tock out, without
// writing a server first.
func (a *app) listenCmd() *cobra.Command {
	var addr string
	var status int
	cmd := &cobra.Command{
		Use:   "listen",
		Short: "Receive webhooks locally: print each request (tock's headers and the body) and answer it",
		Long: `listen serves HTTP on --addr and prints every request it receives: the time, the
method and path, tock's headers (X-Tock-Job-Id, X-Tock-Scheduled-For, X-Tock-Attempt,
Idempotency-Key, X-Tock-Signature) and the body (its first 64 KiB). It answers each with
--status (200), so a job aimed at it completes; answer 500 to watch retries. Ctrl-C stops it.

make run lets jobs call loopback addresses (TOCK_ALLOW_PRIVATE_TARGETS=true); a
production worker refuses them unless its operator allows it.`,
		Example: `  tock listen --addr 127.0.0.1:9000
  tock jobs create --name hello --type webhook --delay 5s --target http://127.0.0.1:9000/hook`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status < 200 || status > 599 {
				return usagef("--status must be an HTTP status from 200 to 599, not %d", status)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			return a.listen(cmd.Context(), ln, status)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9000", "address to listen on")
	cmd.Flags().IntVar(&status, "status", http.StatusOK, "HTTP status to answer every request with")
	return cmd
}

// listen serves ln until ctx ends, printing each request to a.out.
func (a *app) listen(ctx context.Context, ln net.Listener, status int) error {
	fmt.Fprintf(a.out, "listening on http://%s (answering %d); Ctrl-C stops\n", ln.Addr(), status)
	var mu sync.Mutex // one request's lines together
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, listenBodyLimit+1))
		more := len(body) > listenBodyLimit
		if more {
			body = body[:listenBodyLimit]
		}
		mu.Lock()
		fmt.Fprintf(a.out, "%s %s %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), r.Method, r.URL.RequestURI())
		var names []string
		for k := range r.Header {
			if strings.HasPrefix(k, "X-Tock-") || k == "Idempotency-Key" || k == "Content-Type" {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(a.out, "  %s: %s\n", k, strings.Join(r.Header[k], ", "))
		}
		if len(body) > 0 {
			fmt.Fprintf(a.out, "  %s\n", body)
		}
		if more {
			fmt.Fprintf(a.out, "  (body cut at %d bytes)\n", listenBodyLimit)
		}
		mu.Unlock()
		w.WriteHeader(status)
	})}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
