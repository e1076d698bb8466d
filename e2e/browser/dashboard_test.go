package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tockhq/tock/e2e/cluster"
)

// chromiumPath is Debian's chromium; CI installs it (.ci/run).
const chromiumPath = "/usr/bin/chromium"

// browse starts a headless Chromium for t. Without the binary the test
// skips, except under CI=true, where it fails.
func browse(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required under CI: %v (apt-get install -y chromium)", err)
		}
		t.Skipf("no chromium at %s (apt-get install -y chromium): skipping the browser tests", chromiumPath)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.DisableGPU)
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	require(t, chromedp.Do(ctx))
	return ctx
}

// screenshots is where the PNGs go: $TOCK_SCREENSHOTS_DIR, else a
// temporary directory of the test.
func screenshots(t *testing.T) string {
	if d := os.Getenv("TOCK_SCREENSHOTS_DIR"); d != "" {
		require(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

func shot(t *testing.T, dir, name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, target *chromedp.Target) (chromedp.Void, error) {
		buf, err := chromedp.CaptureScreenshot()(ctx, target)
		if err != nil {
			return chromedp.Void{}, err
		}
		t.Logf("screenshot %s", filepath.Join(dir, name))
		return chromedp.Void{}, os.WriteFile(filepath.Join(dir, name), buf, 0o644)
	}
}

func require(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// within runs actions with a deadline, so a missing element fails the test
// instead of hanging it.
func within(t *testing.T, ctx context.Context, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Do(actx, actions...); err != nil {
		// Say what the page showed: a timeout alone does not.
		var url, text string
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		_ = chromedp.Do(dctx, location(&url), eval(`document.body.innerText`, &text))
		t.Fatalf("%v\npage %s shows:\n%s", err, url, text)
	}
}

// eval evaluates a JavaScript expression into *out.
func eval[T any](expr string, out *T) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, target *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[T](expr)(ctx, target)
		*out = v
		return chromedp.Void{}, err
	}
}

// location reads the page's URL into *out.
func location(out *string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, target *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Location()(ctx, target)
		*out = v
		return chromedp.Void{}, err
	}
}

// setField sets an input's value as a person would, firing input and change.
func setField(sel, value string) chromedp.Action[chromedp.Void] {
	var ignored any
	return eval(fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.value = %q;
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); return null; })()`, sel, value), &ignored)
}

// loads counts page loads, so that each navigation has a URL of its own.
var loads int

// page loads the dashboard afresh at a route such as "#/new". Navigating only
// the fragment of the page already shown fires no load event, which
// chromedp.Navigate would wait for in vain; a new query string makes it a
// real load, as when a person opens a link.
func page(base, route string) chromedp.Action[chromedp.Void] {
	loads++
	if i := strings.Index(route, "#"); i >= 0 {
		route = route[i:]
	}
	return chromedp.Navigate(fmt.Sprintf("%s/?load=%d%s", base, loads, route))
}

func TestDashboard(t *testing.T) {
	ctx := browse(t)
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	dir := screenshots(t)
	base := c.APIURL

	t.Run("SignIn", func(t *testing.T) {
		within(t, ctx, 20*time.Second,
			page(base, "#/signin"),
			chromedp.WaitVisible(chromedp.CSS("#key")),
			chromedp.SendKeys(chromedp.CSS("#key"), "not-a-key"),
			chromedp.Click(chromedp.CSS("#signin")),
			chromedp.WaitVisible(chromedp.CSS(".signin .error")),
			shot(t, dir, "signin.png"),
			setField("#key", c.Token),
			chromedp.Click(chromedp.CSS("#signin")),
			chromedp.WaitVisible(chromedp.CSS("#jobs")),
		)
		var cookies string
		within(t, ctx, 5*time.Second, eval(`document.cookie`, &cookies))
		if strings.Contains(cookies, "tock_session") {
			t.Fatalf("the session cookie is readable by scripts: %q", cookies)
		}
	})

	var oneOffURL string
	t.Run("OneOffRunsAndCompletes", func(t *testing.T) {
		within(t, ctx, 20*time.Second,
			page(base, "#/new"),
			chromedp.WaitVisible(chromedp.CSS("#job-form")),
			setField("#name", "browser one-off"),
			setField("#type", "ping"),
			setField("#payload", fmt.Sprintf(`{"url": %q}`, base+"/healthz")),
			eval(`(() => { const el = document.querySelector('#run_at'); el.value = localInput(new Date(Date.now() + 4000));
				el.dispatchEvent(new Event('input', {bubbles: true})); return null; })()`, new(any)),
			chromedp.Click(chromedp.CSS("#save")),
			chromedp.WaitVisible(chromedp.CSS("#detail #job-title")),
			location(&oneOffURL),
		)
		within(t, ctx, 45*time.Second,
			chromedp.WaitVisible(chromedp.CSS(`#runs tr.run[data-status="completed"]`)),
			shot(t, dir, "job-detail.png"),
		)
	})

	t.Run("RetryAPermanentlyFailedRun", func(t *testing.T) {
		// A ping of a path the dashboard does not serve answers 404: with
		// no retries the first attempt ends permanently_failed.
		within(t, ctx, 20*time.Second,
			page(base, "#/new"),
			chromedp.WaitVisible(chromedp.CSS("#job-form")),
			setField("#name", "browser failing"),
			setField("#type", "ping"),
			setField("#max_retries", "0"),
			setField("#payload", fmt.Sprintf(`{"url": %q}`, base+"/no-such-page")),
			eval(`(() => { const el = document.querySelector('#run_at'); el.value = localInput(new Date(Date.now() + 2000));
				el.dispatchEvent(new Event('input', {bubbles: true})); return null; })()`, new(any)),
			chromedp.Click(chromedp.CSS("#save")),
			chromedp.WaitVisible(chromedp.CSS("#detail #job-title")),
		)
		within(t, ctx, 45*time.Second,
			chromedp.WaitVisible(chromedp.CSS(`#runs tr.run[data-status="permanently_failed"] button.retry`)),
			chromedp.Click(chromedp.CSS(`#runs tr.run[data-status="permanently_failed"] button.retry`)),
			chromedp.WaitVisible(chromedp.CSS(`#runs tr.run[data-attempt="2"][data-status="permanently_failed"]`)),
			shot(t, dir, "retried.png"),
		)
	})

	var recurringURL string
	t.Run("RecurringWithPreview", func(t *testing.T) {
		var previews int
		within(t, ctx, 20*time.Second,
			page(base, "#/new"),
			chromedp.WaitVisible(chromedp.CSS("#job-form")),
			setField("#name", "browser recurring"),
			chromedp.Click(chromedp.CSS("#kind-recurring")),
			setField("#expr", "nonsense"),
			chromedp.WaitVisible(chromedp.CSS(`[data-error-for="schedule.expr"]`)),
			setField("#expr", "0 9 * * MON-FRI"),
			setField("#timezone", "Europe/Berlin"),
			chromedp.WaitVisible(chromedp.CSS("#preview li:nth-child(10)")),
			eval(`document.querySelectorAll('#preview li').length`, &previews),
			shot(t, dir, "new-recurring.png"),
			chromedp.Click(chromedp.CSS("#save")),
			chromedp.WaitVisible(chromedp.CSS("#detail #next-runs")),
			location(&recurringURL),
		)
		if previews != 10 {
			t.Fatalf("preview shows %d runs, want 10", previews)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		if recurringURL == "" {
			t.Fatal("no recurring job to cancel: RecurringWithPreview failed")
		}
		within(t, ctx, 20*time.Second,
			page(base, recurringURL),
			chromedp.WaitVisible(chromedp.CSS("#cancel")),
			chromedp.Click(chromedp.CSS("#cancel")),
			chromedp.Click(chromedp.CSS("#cancel")),
			chromedp.WaitVisible(chromedp.CSS("#status .st-cancelled")),
			shot(t, dir, "cancelled.png"),
		)
	})

	t.Run("FilterTheList", func(t *testing.T) {
		var names []string
		within(t, ctx, 20*time.Second,
			page(base, "#/jobs"),
			chromedp.WaitVisible(chromedp.CSS("#filters")),
			setField("#f-q", "ONE-OFF"),
			chromedp.Click(chromedp.CSS("#apply")),
			chromedp.WaitVisible(chromedp.CSS(`#jobs[data-query*="q=ONE-OFF"] tbody tr[data-id]`)),
			eval(`[...document.querySelectorAll('#jobs .job-name')].map(a => a.textContent)`, &names),
		)
		if len(names) != 1 || names[0] != "browser one-off" {
			t.Fatalf("search ONE-OFF shows %v", names)
		}
		within(t, ctx, 20*time.Second,
			page(base, "#/jobs?status=cancelled"),
			chromedp.WaitVisible(chromedp.CSS(`#jobs tbody tr[data-id]`)),
			eval(`[...document.querySelectorAll('#jobs .job-name')].map(a => a.textContent)`, &names),
		)
		if len(names) != 1 || names[0] != "browser recurring" {
			t.Fatalf("status cancelled shows %v", names)
		}
		within(t, ctx, 20*time.Second,
			page(base, "#/jobs"),
			chromedp.WaitVisible(chromedp.CSS(`#jobs tbody tr[data-id]`)),
			shot(t, dir, "jobs.png"),
		)
	})

	t.Run("System", func(t *testing.T) {
		within(t, ctx, 20*time.Second,
			page(base, "#/system"),
			chromedp.WaitVisible(chromedp.CSS("#chart-runs")),
			chromedp.WaitVisible(chromedp.CSS("#workers")),
			chromedp.WaitVisible(chromedp.CSS(`#schedulers tbody tr td .st-live`)),
			shot(t, dir, "system.png"),
		)
	})
}
