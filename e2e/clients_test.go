package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tockhq/tock/e2e/cluster"
)

// clientServices starts the services a client's tests run against (a
// dashboard, a scheduler and a worker), and a proxy in front of the
// dashboard that answers 503 in place of the first POST /api/v1/jobs's
// answer. env tells the tests where: TOCK_URL, TOCK_TOKEN (the admin's)
// and TOCK_LOSSY_URL.
func clientServices(t *testing.T) (proxy *lossyProxy, env []string) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	proxy = newLossyProxy(t, c.APIURL, func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Path == "/api/v1/jobs"
	})
	return proxy, []string{"TOCK_URL=" + c.APIURL, "TOCK_TOKEN=" + c.Token, "TOCK_LOSSY_URL=" + proxy.URL}
}

// runTool runs name with args in dir, with env added to the test's own,
// logging what it prints a line at a time as it comes, and how long it
// took; it fails the test if the command fails, and returns its standard
// output and error. The TypeScript and Python clients' tests run so.
func runTool(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, errs := &lineLog{t: t}, &lineLog{t: t}
	cmd.Stdout, cmd.Stderr = out, errs
	line := name + " " + strings.Join(args, " ")
	started := time.Now()
	err := cmd.Run()
	out.flush()
	errs.flush()
	if err != nil {
		t.Fatalf("%s (in %s): %v", line, dir, err)
	}
	t.Logf("%s took %s", line, time.Since(started).Round(10*time.Millisecond))
	return out.all.String(), errs.all.String()
}

// lineLog logs what one stream of a command prints to the test log, a line
// at a time as it comes, and keeps all of it.
type lineLog struct {
	t       *testing.T
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.t.Log(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

// flush logs a last line that did not end in a newline.
func (l *lineLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.t.Log(string(l.partial))
		l.partial = nil
	}
}
