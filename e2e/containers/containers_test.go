// Package containers runs tock's three services as containers, the way
// docker-compose.yml describes them (host network here, health checks, the
// environment, a read-only root, the non-root user 65532), and sends one job
// through them: created through the containerised dashboard, loaded by the
// containerised scheduler, delivered by the containerised worker to a
// receiver on the host. The images are deployments/Containerfile.runtime
// (the Dockerfile's runtime stage, FROM scratch: this machine kind pulls no
// base image) around binaries built here.
//
// It runs under `make containers` (TOCK_CONTAINERS=1, podman with the runc
// runtime; scripts/dev/containers.sh installs them) and skips otherwise.
package containers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/tockhq/tock/pkg/testenv"
)

// podman runs podman with the runc runtime (crun fails on this machine
// kind's cgroups) and returns its standard output.
func podman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := podmanErr(args...)
	if err != nil {
		t.Fatalf("podman %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func podmanErr(args ...string) (string, error) {
	cmd := exec.Command("podman", append([]string{"--runtime", "runc"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// buildImage builds service's image from a static binary and the runtime
// Containerfile, and returns its size in bytes.
func buildImage(t *testing.T, root, service, tag string) int64 {
	t.Helper()
	ctxDir := t.TempDir()
	pkg := "./services/" + service
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(ctxDir, "service"), pkg)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", service, err, out)
	}
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"group":  "root:x:0:\nnonroot:x:65532:\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(ctxDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		certs = nil // none on this machine: the image trusts nothing, which the test does not need
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "ca-certificates.crt"), certs, 0o644); err != nil {
		t.Fatal(err)
	}
	podman(t, "build", "--quiet", "-f", filepath.Join(root, "deployments", "Containerfile.runtime"), "-t", tag, ctxDir)
	size, err := strconv.ParseInt(podman(t, "image", "inspect", "--format", "{{.Size}}", tag), 10, 64)
	if err != nil {
		t.Fatalf("image size of %s: %v", tag, err)
	}
	return size
}

// receiver counts the deliveries of each job id.
type receiver struct {
	mu   sync.Mutex
	got  map[string]int
	body map[string]string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	id := req.Header.Get("X-Tock-Job-Id")
	r.got[id]++
	r.body[id] = string(b)
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) deliveries(id string) (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[id], r.body[id]
}

func TestSpineThroughContainers(t *testing.T) {
	if os.Getenv("TOCK_CONTAINERS") != "1" {
		t.Skip("runs under make containers (TOCK_CONTAINERS=1, podman and runc)")
	}
	started := time.Now()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)

	// A database and key prefix of the test's own.
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, testenv.DatabaseURL())
	if err != nil {
		t.Fatalf("Postgres: %v", err)
	}
	db := "tock_ctr_" + id
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		admin.Close(context.Background())
	})
	u, err := url.Parse(testenv.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	dbURL := u.String()

	prefix := "tockctr-" + id
	t.Cleanup(func() {
		// Registered first, so it runs after the containers are gone.
		opt, err := redis.ParseURL(testenv.RedisURL())
		if err != nil {
			return
		}
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		it := rdb.Scan(context.Background(), 0, prefix+":*", 1000).Iterator()
		for it.Next(context.Background()) {
			rdb.Unlink(context.Background(), it.Val())
		}
	})

	rec := &receiver{got: map[string]int{}, body: map[string]string{}}
	target := &http.Server{Handler: rec, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = target.Serve(ln) }()
	t.Cleanup(func() { _ = target.Close() })

	token := "ctr-" + id + "-admin-token-long-enough"
	httpAddr := freePort(t)
	env := []string{
		"TOCK_DATABASE_URL=" + dbURL,
		"TOCK_REDIS_URL=" + testenv.RedisURL(),
		"TOCK_REDIS_PREFIX=" + prefix,
		"TOCK_ALLOW_PRIVATE_TARGETS=true",
		"TOCK_LOG_LEVEL=info",
	}
	images := map[string]int64{}
	for _, svc := range []string{"dashboard", "scheduler", "worker"} {
		tag := "localhost/tock-" + svc + ":test-" + id
		images[svc] = buildImage(t, root, svc, tag)
		t.Cleanup(func() { _, _ = podmanErr("rmi", "-f", tag) })
		name := "tock-" + svc + "-" + id
		args := []string{"run", "-d", "--name", name, "--network", "host", "--read-only", "--user", "65532:65532",
			"--health-cmd", `["/usr/local/bin/service", "healthcheck"]`, "--health-interval", "1s", "--health-retries", "30"}
		svcEnv := append([]string(nil), env...)
		svcEnv = append(svcEnv, "TOCK_METRICS_ADDR="+freePort(t))
		if svc == "dashboard" {
			svcEnv = append(svcEnv, "TOCK_HTTP_ADDR="+httpAddr, "TOCK_ADMIN_TOKEN="+token)
		}
		if svc == "worker" {
			svcEnv = append(svcEnv, "TOCK_WORKER_NAME="+name, "TOCK_SHUTDOWN_GRACE=5s")
		}
		for _, e := range svcEnv {
			args = append(args, "-e", e)
		}
		podman(t, append(args, tag)...)
		t.Cleanup(func() {
			if t.Failed() {
				logs, _ := podmanErr("logs", "--tail", "40", name)
				t.Logf("--- %s ---\n%s", name, logs)
			}
			_, _ = podmanErr("rm", "-f", "-t", "5", name)
		})
		// The dashboard migrates the database; the others wait for it.
		waitHealthy(t, name, 60*time.Second)
		user := podman(t, "inspect", "--format", "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}", name)
		if user != "65532:65532 true" {
			t.Fatalf("%s runs as user and read-only root %q, want 65532:65532 true", name, user)
		}
	}
	t.Logf("images built and healthy in %s; sizes: dashboard %.1f MB, scheduler %.1f MB, worker %.1f MB",
		time.Since(started).Round(time.Second), float64(images["dashboard"])/1e6, float64(images["scheduler"])/1e6, float64(images["worker"])/1e6)

	// The spine: a webhook job created through the dashboard's container,
	// delivered once by the worker's.
	body, _ := json.Marshal(map[string]any{"name": "through containers", "type": "webhook", "delay": "1s",
		"payload": map[string]any{"url": "http://" + ln.Addr().String() + "/hook", "method": "POST", "body": map[string]any{"spine": id}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+httpAddr+"/api/v1/jobs", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	err = json.NewDecoder(res.Body).Decode(&created)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || err != nil || created.ID == "" {
		t.Fatalf("create through the dashboard's container: %d, %v", res.StatusCode, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, got := rec.deliveries(created.ID)
		if n > 0 {
			if !strings.Contains(got, id) {
				t.Fatalf("the delivery carried %q", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job was not delivered within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Its outcome is recorded, and it ran once.
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/api/v1/jobs/"+created.ID+"/runs", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var runs struct{ Runs []struct{ Status string } }
		_ = json.NewDecoder(res.Body).Decode(&runs)
		res.Body.Close()
		if len(runs.Runs) == 1 && runs.Runs[0].Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs after the delivery: %+v", runs.Runs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n, _ := rec.deliveries(created.ID); n != 1 {
		t.Fatalf("delivered %d times, want once", n)
	}
	t.Logf("spine through the containers: created, delivered once and recorded completed; %s in all", time.Since(started).Round(time.Second))
}

// waitHealthy waits until podman's health check of container name passes.
func waitHealthy(t *testing.T, name string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := podmanErr("healthcheck", "run", name); err == nil {
			return
		}
		state, _ := podmanErr("inspect", "--format", "{{.State.Status}}", name)
		if state == "exited" || time.Now().After(deadline) {
			logs, _ := podmanErr("logs", "--tail", "40", name)
			t.Fatalf("%s is not healthy (state %s):\n%s", name, state, logs)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
