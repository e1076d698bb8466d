package browser

import (
	"context"
	"fmt"
	"net/http"
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

// jobJSON reads a job through the API as a generic object.
func jobJSON(t *testing.T, api *cluster.API, id string) map[string]any {
	t.Helper()
	var j map[string]any
	code, err := api.Do(t.Context(), "GET", "/api/v1/jobs/"+id, nil, &j)
	if err != nil || code != 200 {
		t.Fatalf("get job %s: %d %v", id, code, err)
	}
	return j
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

	var failingURL string
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
			location(&failingURL),
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
			chromedp.WaitVisible(chromedp.CSS("#confirm-yes")),
			chromedp.Click(chromedp.CSS("#confirm-yes")),
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

	api := c.API()

	t.Run("EditKeepsEveryScheduleField", func(t *testing.T) {
		start := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
		end := start.Add(90 * 24 * time.Hour)
		j, err := api.CreateJob(t.Context(), map[string]any{"name": "browser keep", "type": "ping",
			"payload": map[string]any{"url": base + "/healthz"}, "overlap": "skip", "expires_after": "10m",
			"labels": map[string]string{"team": "ops"},
			"schedule": map[string]any{"cron": "0 9 * * *", "timezone": "Europe/Berlin", "start_at": start, "end_at": end,
				"count": 50, "misfire": "catch_up", "misfire_max": 7, "dst": map[string]any{"gap": "skip", "overlap": "both"}}})
		if err != nil {
			t.Fatal(err)
		}
		before := jobJSON(t, api, j.ID)
		within(t, ctx, 20*time.Second,
			page(base, "#/jobs/"+j.ID+"/edit"),
			chromedp.WaitVisible(chromedp.CSS("#job-form")),
			setField("#expr", "0 10 * * *"),
			chromedp.WaitVisible(chromedp.CSS("#preview li:nth-child(10)")),
			shot(t, dir, "edit-recurring.png"),
			chromedp.Click(chromedp.CSS("#save")),
			chromedp.WaitVisible(chromedp.CSS("#detail #job-title")),
		)
		after := jobJSON(t, api, j.ID)
		sb, sa := before["schedule"].(map[string]any), after["schedule"].(map[string]any)
		if sa["cron"] != "0 10 * * *" {
			t.Fatalf("cron is %v after the edit", sa["cron"])
		}
		for _, k := range []string{"timezone", "start_at", "end_at", "count", "misfire", "misfire_max", "dst"} {
			if fmt.Sprint(sb[k]) != fmt.Sprint(sa[k]) {
				t.Fatalf("schedule.%s changed from %v to %v on an edit of the cron only", k, sb[k], sa[k])
			}
		}
		for _, k := range []string{"name", "payload", "overlap", "expires_after", "labels", "max_retries", "timeout", "priority", "retention", "history", "notify"} {
			if fmt.Sprint(before[k]) != fmt.Sprint(after[k]) {
				t.Fatalf("%s changed from %v to %v on an edit of the cron only", k, before[k], after[k])
			}
		}
	})

	t.Run("CallbackOnCompletion", func(t *testing.T) {
		// The job is due in an hour: the test reads its notify, and no
		// callback is sent.
		url := base + "/healthz"
		var id, shown, dest, to string
		within(t, ctx, 20*time.Second,
			page(base, "#/new"),
			chromedp.WaitVisible(chromedp.CSS("#job-form")),
			setField("#name", "browser callback"),
			setField("#type", "ping"),
			setField("#payload", fmt.Sprintf(`{"url": %q}`, url)),
			setField("#oneoff-how", "delay"),
			setField("#delay", "1h"),
			chromedp.Click(chromedp.CSS("details:has(#notify-completed) > summary")),
			chromedp.Click(chromedp.CSS("#notify-completed")),
			setField("#notify-dest", "callback"),
			setField("#notify-to", url),
			chromedp.ScrollIntoView(chromedp.CSS("#notify-to")),
			shot(t, dir, "new-callback.png"),
			chromedp.Click(chromedp.CSS("#save")),
			chromedp.WaitVisible(chromedp.CSS("#detail #notify")),
			eval(`location.hash.split('/')[2]`, &id),
			eval(`document.querySelector('#notify').textContent`, &shown),
		)
		if want := "completed → callback " + url; shown != want {
			t.Fatalf("the job page shows alerts %q, want %q", shown, want)
		}
		n, _ := jobJSON(t, api, id)["notify"].(map[string]any)
		if cb, _ := n["callback"].(map[string]any); cb == nil || cb["url"] != url || fmt.Sprint(n["on"]) != "[completed]" {
			t.Fatalf("the API's job has notify %v", n)
		}
		within(t, ctx, 20*time.Second,
			page(base, "#/jobs/"+id+"/edit"),
			chromedp.WaitVisible(chromedp.CSS("#job-form")),
			eval(`document.querySelector('#notify-dest').value`, &dest),
			eval(`document.querySelector('#notify-to').value`, &to),
		)
		if dest != "callback" || to != url {
			t.Fatalf("the edit form sends alerts to %s %q", dest, to)
		}
	})

	t.Run("SLOThroughTheForm", func(t *testing.T) {
		// An SLO out of bounds is refused on its field; the job made with
		// one shows it, its edit form holds it, and clearing both removes it.
		var id, refused, terms, late, silent string
		within(t, ctx, 20*time.Second,
			page(base, "#/new"),
			chromedp.WaitVisible(chromedp.CSS("#job-form")),
			setField("#name", "browser slo"),
			setField("#type", "ping"),
			setField("#payload", fmt.Sprintf(`{"url": %q}`, base+"/healthz")),
			chromedp.Click(chromedp.CSS("#kind-recurring")),
			setField("#expr", "0 * * * *"),
			chromedp.Click(chromedp.CSS("details:has(#slo-late) > summary")),
			setField("#slo-late", "0s"),
			setField("#slo-silent", "2h"),
			chromedp.Click(chromedp.CSS("details:has(#notify-slo_breach) > summary")),
			chromedp.Click(chromedp.CSS("#notify-slo_breach")),
			setField("#notify-dest", "callback"),
			setField("#notify-to", base+"/healthz"),
			chromedp.Click(chromedp.CSS("#save")),
			chromedp.WaitVisible(chromedp.CSS(`[data-error-for="slo.late_after"]`)),
			eval(`document.querySelector('[data-error-for="slo.late_after"]').textContent`, &refused),
			setField("#slo-late", "500ms"),
			chromedp.ScrollIntoView(chromedp.CSS("#slo-late")),
			shot(t, dir, "new-slo.png"),
			chromedp.Click(chromedp.CSS("#save")),
			chromedp.WaitVisible(chromedp.CSS("#detail #slo")),
			eval(`location.hash.split('/')[2]`, &id),
			eval(`document.querySelector('#slo-terms').textContent`, &terms),
		)
		if !strings.HasPrefix(refused, "Late after: ") {
			t.Fatalf("late after 0s shows %q on its field", refused)
		}
		if want := "starts within 500ms · completes at least every 2h"; terms != want {
			t.Fatalf("the job page shows the SLO %q, want %q", terms, want)
		}
		j := jobJSON(t, api, id)
		if slo, _ := j["slo"].(map[string]any); slo == nil || slo["late_after"] != "500ms" || slo["silent_after"] != "2h0m0s" {
			t.Fatalf("the API's job has slo %v", j["slo"])
		}
		if n, _ := j["notify"].(map[string]any); fmt.Sprint(n["on"]) != "[slo_breach]" {
			t.Fatalf("the API's job has notify %v", j["notify"])
		}
		within(t, ctx, 20*time.Second,
			page(base, "#/jobs/"+id+"/edit"),
			chromedp.WaitVisible(chromedp.CSS("#slo-late")),
			eval(`document.querySelector('#slo-late').value`, &late),
			eval(`document.querySelector('#slo-silent').value`, &silent),
			setField("#slo-late", ""),
			setField("#slo-silent", ""),
			chromedp.Click(chromedp.CSS("#save")),
			chromedp.WaitVisible(chromedp.CSS("#detail #job-title")),
			chromedp.WaitNotPresent(chromedp.CSS("#detail #slo")),
		)
		if late != "500ms" || silent != "2h" {
			t.Fatalf("the edit form holds late after %q and silent after %q", late, silent)
		}
		if slo, ok := jobJSON(t, api, id)["slo"]; ok {
			t.Fatalf("clearing the SLO left %v", slo)
		}
	})

	t.Run("BreachedSLOIsFlagged", func(t *testing.T) {
		// A job held behind a paused flow key starts none of its runs: its
		// late_after breaks within a few seconds.
		if code, err := api.Do(t.Context(), http.MethodPut, "/api/v1/flows/ui-held", map[string]any{"paused": true}, nil); err != nil || code != http.StatusCreated {
			t.Fatalf("put flow: %d, %v", code, err)
		}
		j, err := api.CreateJob(t.Context(), map[string]any{"name": "browser held", "type": "ping",
			"payload": map[string]any{"url": base + "/healthz"}, "schedule": map[string]any{"cron": "* * * * * *"},
			"flow": map[string]any{"key": "ui-held"}, "slo": map[string]any{"late_after": "500ms"}})
		if err != nil {
			t.Fatal(err)
		}
		if !cluster.WaitUntil(20*time.Second, 200*time.Millisecond, func() bool {
			st, _ := jobJSON(t, api, j.ID)["slo_status"].(map[string]any)
			return st != nil && st["breached"] == true
		}) {
			t.Fatal("the held job's SLO did not break")
		}
		var why string
		within(t, ctx, 20*time.Second,
			page(base, "#/jobs/"+j.ID),
			chromedp.WaitVisible(chromedp.CSS("#slo .slo-breached")),
			eval(`document.querySelector('#slo-why').textContent`, &why),
			shot(t, dir, "slo-breached.png"),
		)
		if !strings.HasPrefix(why, "late by ") || !strings.Contains(why, " since ") {
			t.Fatalf("the breached SLO says %q", why)
		}
		// The at-risk filter lists it with its badge, and is not combined
		// with a label filter: each control is disabled while the other is set.
		var riskOff, labelOff bool
		var names []string
		within(t, ctx, 20*time.Second,
			page(base, "#/jobs"),
			chromedp.WaitVisible(chromedp.CSS("#f-at_risk")),
			setField("#f-label", "team=ops"),
			eval(`document.querySelector('#f-at_risk').disabled`, &riskOff),
			setField("#f-label", ""),
			chromedp.Click(chromedp.CSS("#f-at_risk")),
			eval(`document.querySelector('#f-label').disabled`, &labelOff),
			chromedp.Click(chromedp.CSS("#apply")),
			chromedp.WaitVisible(chromedp.CSS(`#jobs[data-query*="at_risk=true"] tbody tr[data-id="`+j.ID+`"] .slo-breached`)),
			eval(`[...document.querySelectorAll('#jobs tbody tr[data-id]')].map(tr => tr.querySelector('.job-name').textContent + (tr.querySelector('.slo-breached') ? ' breached' : ''))`, &names),
			shot(t, dir, "jobs-at-risk.png"),
		)
		if !riskOff || !labelOff {
			t.Fatalf("with a label the at-risk filter is disabled: %v; with at risk the label is: %v", riskOff, labelOff)
		}
		if len(names) != 1 || names[0] != "browser held breached" {
			t.Fatalf("the at-risk list shows %q", names)
		}
		if code, err := api.Do(t.Context(), http.MethodDelete, "/api/v1/jobs/"+j.ID, nil, nil); err != nil || code >= 300 {
			t.Fatalf("cancel the held job: %d, %v", code, err)
		}
	})

	t.Run("FocusSurvivesRefreshes", func(t *testing.T) {
		j, err := api.CreateJob(t.Context(), map[string]any{"name": "browser focus", "type": "ping",
			"payload": map[string]any{"url": base + "/healthz"}, "schedule": map[string]any{"cron": "0 * * * *"}})
		if err != nil {
			t.Fatal(err)
		}
		var focused string
		within(t, ctx, 20*time.Second,
			page(base, "#/jobs/"+j.ID),
			chromedp.WaitVisible(chromedp.CSS("#pause")),
			chromedp.Focus(chromedp.CSS("#pause")),
			chromedp.Sleep(4500*time.Millisecond), // two refreshes, every 2 s
			eval(`document.activeElement && document.activeElement.id`, &focused),
		)
		if focused != "pause" {
			t.Fatalf("after two refreshes the focus is on %q, not the Pause button", focused)
		}
		// A destructive action asks in a dialog the refreshes leave alone.
		var open bool
		within(t, ctx, 20*time.Second,
			chromedp.Click(chromedp.CSS("#cancel")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-no")),
			chromedp.Sleep(4500*time.Millisecond),
			eval(`document.getElementById('confirm').open`, &open),
		)
		if !open {
			t.Fatal("the confirmation closed by itself")
		}
		within(t, ctx, 10*time.Second, chromedp.Click(chromedp.CSS("#confirm-no")))
		if got := jobJSON(t, api, j.ID)["status"]; got != "scheduled" {
			t.Fatalf("declining the confirmation left the job %v", got)
		}
	})

	t.Run("BulkRetryAndRunSearch", func(t *testing.T) {
		var ids []string
		for i := range 3 {
			j, err := api.CreateJob(t.Context(), map[string]any{"name": fmt.Sprintf("browser bulk %d", i), "type": "ping",
				"max_retries": 0, "run_at": time.Now().Add(time.Second), "labels": map[string]string{"batch": "ui"},
				"payload": map[string]any{"url": base + "/no-such-page"}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, j.ID)
		}
		if !cluster.WaitUntil(30*time.Second, 200*time.Millisecond, func() bool {
			for _, id := range ids {
				if jobJSON(t, api, id)["status"] != "permanently_failed" {
					return false
				}
			}
			return true
		}) {
			t.Fatal("the jobs did not fail")
		}
		within(t, ctx, 30*time.Second,
			page(base, "#/jobs?label=batch%3Dui&status=permanently_failed"),
			chromedp.WaitVisible(chromedp.CSS(`#jobs tbody tr[data-id] .last-error`)),
			chromedp.Click(chromedp.CSS("#pick-all")),
			setField("#bulk-action", "retry"),
			chromedp.Click(chromedp.CSS("#bulk-selected")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-yes")),
			shot(t, dir, "bulk-confirm.png"),
			chromedp.Click(chromedp.CSS("#confirm-yes")),
			chromedp.WaitVisible(chromedp.CSS("#bulk-done")),
		)
		if !cluster.WaitUntil(30*time.Second, 200*time.Millisecond, func() bool {
			for _, id := range ids {
				runs, err := api.Runs(t.Context(), id, 10)
				if err != nil || len(runs) != 2 || runs[0].Attempt != 2 || runs[0].Status == "running" {
					return false
				}
			}
			return true
		}) {
			t.Fatal("the bulk retry did not run each job once more")
		}

		var errs []string
		within(t, ctx, 30*time.Second,
			page(base, "#/runs"),
			chromedp.WaitVisible(chromedp.CSS("#run-filters")),
			setField("#r-q", "404"),
			setField("#r-status", "permanently_failed"),
			chromedp.Click(chromedp.CSS("#run-apply")),
			chromedp.WaitVisible(chromedp.CSS(`#all-runs[data-query*="q=404"] tbody tr.run`)),
			eval(`[...document.querySelectorAll('#all-runs tbody tr.run .error-text')].map(e => e.textContent)`, &errs),
			shot(t, dir, "runs.png"),
		)
		if len(errs) < 6 {
			t.Fatalf("the runs search shows %d failures, want the 6 attempts", len(errs))
		}
		for _, e := range errs {
			if !strings.Contains(e, "404") {
				t.Fatalf("the runs search shows an error without 404: %q", e)
			}
		}

		// The retried attempts failed for good too: three dead letters,
		// purged from their page after its confirmation.
		var dead int
		within(t, ctx, 30*time.Second,
			page(base, "#/dead-letters?label=batch%3Dui"),
			chromedp.WaitVisible(chromedp.CSS(`#dead-letters tbody tr.dead`)),
			eval(`document.querySelectorAll('#dead-letters tbody tr.dead').length`, &dead),
			shot(t, dir, "dead-letters.png"),
			chromedp.Click(chromedp.CSS("#dead-purge-all")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-yes")),
			chromedp.Click(chromedp.CSS("#confirm-yes")),
			chromedp.WaitVisible(chromedp.CSS("#dead-done")),
		)
		if dead != len(ids) {
			t.Fatalf("the dead-letter page shows %d, want %d", dead, len(ids))
		}
		var left struct {
			DeadLetters []any `json:"dead_letters"`
		}
		if code, err := api.Do(t.Context(), http.MethodGet, "/api/v1/dead-letters?label=batch%3Dui", nil, &left); err != nil || code != http.StatusOK {
			t.Fatalf("list dead letters: %d, %v", code, err)
		}
		if len(left.DeadLetters) != 0 {
			t.Fatalf("%d dead letters left after the purge", len(left.DeadLetters))
		}
	})

	t.Run("PauseAndResumeAFlowKey", func(t *testing.T) {
		if code, err := api.Do(t.Context(), http.MethodPut, "/api/v1/flows/ui-customer", map[string]any{"concurrency": 3, "rate": "50/1s"}, nil); err != nil || code != http.StatusCreated {
			t.Fatalf("put flow: %d, %v", code, err)
		}
		var state string
		within(t, ctx, 30*time.Second,
			page(base, "#/flows"),
			chromedp.WaitVisible(chromedp.CSS(`#flows tbody tr.flow[data-key="ui-customer"]`)),
			shot(t, dir, "flows.png"),
			chromedp.Click(chromedp.CSS(`#flow-toggle-ui-customer`)),
			chromedp.WaitVisible(chromedp.CSS(`#flows tr.flow[data-key="ui-customer"] .badge.paused`)),
			eval(`document.querySelector('#flows tr.flow[data-key="ui-customer"] .state').textContent`, &state),
		)
		if state != "paused" {
			t.Fatalf("the flow key shows %q after Pause", state)
		}
		var flow struct {
			Paused bool `json:"paused"`
		}
		if code, err := api.Do(t.Context(), http.MethodGet, "/api/v1/flows/ui-customer", nil, &flow); err != nil || code != http.StatusOK || !flow.Paused {
			t.Fatalf("get flow: %d, %v, %+v", code, err, flow)
		}
		within(t, ctx, 30*time.Second,
			chromedp.Click(chromedp.CSS(`#flow-toggle-ui-customer`)),
			chromedp.WaitNotPresent(chromedp.CSS(`#flows tr.flow[data-key="ui-customer"] .badge.paused`)),
		)
	})

	t.Run("AJobShowsItsFlowKeyAndDebounce", func(t *testing.T) {
		var j struct {
			ID string `json:"id"`
		}
		spec := map[string]any{"name": "debounced", "type": "ping", "payload": map[string]any{"url": base + "/healthz"},
			"flow": map[string]any{"key": "ui-customer"}, "debounce": map[string]any{"key": "ui-order", "window": "1h"}}
		if code, err := api.Do(t.Context(), http.MethodPost, "/api/v1/jobs", spec, &j); err != nil || code != http.StatusCreated {
			t.Fatalf("create: %d, %v", code, err)
		}
		var flow, debounce string
		within(t, ctx, 30*time.Second,
			page(base, "#/jobs/"+j.ID),
			chromedp.WaitVisible(chromedp.CSS(`#debounce`)),
			eval(`document.querySelector('#flow').textContent`, &flow),
			eval(`document.querySelector('#debounce').textContent`, &debounce),
		)
		if flow != "ui-customer" || debounce != "ui-order, window 1h" {
			t.Fatalf("the job page shows flow %q and debounce %q", flow, debounce)
		}
	})

	t.Run("CreateAndRevokeAKey", func(t *testing.T) {
		var key string
		within(t, ctx, 20*time.Second,
			page(base, "#/keys"),
			chromedp.WaitVisible(chromedp.CSS("#key-form")),
			setField("#key-name", "browser key"),
			chromedp.Click(chromedp.CSS("#create-key")),
			chromedp.WaitVisible(chromedp.CSS("#new-key")),
			eval(`document.getElementById('new-key').textContent`, &key),
			shot(t, dir, "keys.png"),
		)
		if !strings.HasPrefix(key, "tock_") {
			t.Fatalf("the new key shows as %q", key)
		}
		probe := &cluster.API{Base: api.Base, Token: key, HTTP: api.HTTP}
		if code, err := probe.Do(t.Context(), "GET", "/api/v1/me", nil, nil); err != nil || code != 200 {
			t.Fatalf("the new key answers %d, %v", code, err)
		}
		within(t, ctx, 20*time.Second,
			chromedp.Click(chromedp.CSS("#keys tbody tr:first-child button.revoke")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-yes")),
			chromedp.Click(chromedp.CSS("#confirm-yes")),
			chromedp.WaitVisible(chromedp.CSS("#key-msg .ok")),
		)
		if code, err := probe.Do(t.Context(), "GET", "/api/v1/me", nil, nil); err != nil || code != 401 {
			t.Fatalf("the revoked key answers %d, %v", code, err)
		}
	})

	t.Run("CreateAReadOnlyExpiringKey", func(t *testing.T) {
		var key string
		within(t, ctx, 20*time.Second,
			page(base, "#/keys"),
			chromedp.WaitVisible(chromedp.CSS("#key-form")),
			setField("#key-name", "wall screen"),
			chromedp.SetValue(chromedp.CSS("#key-scopes"), "jobs:read,runs:read"),
			chromedp.SetValue(chromedp.CSS("#key-expiry"), "30"),
			chromedp.Click(chromedp.CSS("#create-key")),
			chromedp.WaitVisible(chromedp.CSS("#new-key")),
			eval(`document.getElementById('new-key').textContent`, &key),
		)
		probe := &cluster.API{Base: api.Base, Token: key, HTTP: api.HTTP}
		var me struct{ Scopes []string }
		if code, err := probe.Do(t.Context(), "GET", "/api/v1/me", nil, &me); err != nil || code != 200 {
			t.Fatalf("the new key answers %d, %v", code, err)
		}
		if strings.Join(me.Scopes, ",") != "jobs:read,runs:read" {
			t.Fatalf("the key's scopes are %v", me.Scopes)
		}
		if code, _ := probe.Do(t.Context(), "POST", "/api/v1/jobs", map[string]any{"name": "x", "type": "ping", "delay": "1h",
			"payload": map[string]any{"url": "https://example.com/"}}, nil); code != 403 {
			t.Fatalf("a read-only key's create answers %d, not 403", code)
		}
		// The table lists the new key once its refresh after the create
		// lands: read it until it does.
		var shown string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			within(t, ctx, 10*time.Second,
				chromedp.WaitVisible(chromedp.CSS("#keys tbody tr td.scopes")),
				eval(`[...document.querySelectorAll('#keys td.scopes')].map(td => td.textContent).join('|')`, &shown),
			)
			if strings.Contains(shown, "jobs:read, runs:read") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the keys table shows scopes %q", shown)
			}
		}
	})

	t.Run("NarrowScreen", func(t *testing.T) {
		for _, route := range []string{"#/jobs", "#/runs", "#/new"} {
			var scroll, width int
			within(t, ctx, 20*time.Second,
				chromedp.EmulateViewport(390, 844),
				page(base, route),
				chromedp.WaitVisible(chromedp.CSS("#main > *")),
				chromedp.Sleep(300*time.Millisecond),
				eval(`document.documentElement.scrollWidth`, &scroll),
				eval(`window.innerWidth`, &width),
			)
			if route == "#/jobs" {
				within(t, ctx, 10*time.Second, shot(t, dir, "mobile-jobs.png"))
			}
			if scroll > width {
				t.Fatalf("%s at 390 px: the page is %d px wide, wider than the %d px viewport", route, scroll, width)
			}
		}
		// On a phone the jobs list and a job's run history are cards: no
		// table scrolls inside its box, every cell says its column, and a
		// run's error is on screen in full.
		if failingURL == "" {
			t.Fatal("no failed job to look at: RetryAPermanentlyFailedRun failed")
		}
		for _, c := range []struct{ url, rows, shot string }{
			{"#/jobs", "#jobs tbody tr[data-id]", "mobile-jobs-cards.png"},
			{failingURL, "#runs tbody tr.run", "mobile-run-history.png"},
		} {
			var scrolling, unlabelled []string
			var offscreen int
			within(t, ctx, 20*time.Second,
				chromedp.EmulateViewport(390, 844),
				page(base, c.url),
				chromedp.WaitVisible(chromedp.CSS(c.rows)),
				chromedp.Sleep(300*time.Millisecond),
				eval(`[...document.querySelectorAll('.table-wrap')].filter(w => w.scrollWidth > w.clientWidth + 1).map(w => w.innerHTML.slice(0, 80))`, &scrolling),
				eval(`[...document.querySelectorAll('`+c.rows+` td')].filter(td => td.textContent.trim() && !td.dataset.label && !td.querySelector('input')).map(td => td.textContent.slice(0, 40))`, &unlabelled),
				eval(`[...document.querySelectorAll('`+c.rows+` .error-text')].filter(e => { const r = e.getBoundingClientRect(); return r.right > window.innerWidth || r.left < 0; }).length`, &offscreen),
				shot(t, dir, c.shot),
			)
			if len(scrolling) > 0 || len(unlabelled) > 0 || offscreen > 0 {
				t.Fatalf("%s at 390 px: %d tables scroll sideways (%q), cells without their column's name %q, %d errors off screen",
					c.url, len(scrolling), scrolling, unlabelled, offscreen)
			}
		}
		within(t, ctx, 10*time.Second, chromedp.EmulateViewport(1280, 900))
	})

	t.Run("DeepLinkSurvivesSignIn", func(t *testing.T) {
		var url string
		within(t, ctx, 30*time.Second,
			page(base, "#/jobs"),
			chromedp.WaitVisible(chromedp.CSS("#signout")),
			chromedp.Click(chromedp.CSS("#signout")),
			chromedp.WaitVisible(chromedp.CSS("#key")),
			page(base, "#/runs?q=404"),
			chromedp.WaitVisible(chromedp.CSS("#key")),
			setField("#key", c.Token),
			chromedp.Click(chromedp.CSS("#signin")),
			chromedp.WaitVisible(chromedp.CSS("#run-filters")),
			location(&url),
		)
		if !strings.Contains(url, "#/runs?q=404") {
			t.Fatalf("after sign-in the page is %s, not the link followed", url)
		}
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

// signIn opens a dashboard session in the browser with the admin token.
func signIn(t *testing.T, ctx context.Context, c *cluster.Cluster) {
	t.Helper()
	within(t, ctx, 20*time.Second,
		page(c.APIURL, "#/signin"),
		chromedp.WaitVisible(chromedp.CSS("#key")),
		setField("#key", c.Token),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#jobs")),
	)
}

// TestDashboardBackfill backfills an hourly job from its page over the three
// past hours before this one: the backfill is listed with its three
// occurrences, and is cancelled from there unless it completed first.
func TestDashboardBackfill(t *testing.T) {
	ctx := browse(t)
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	dir := screenshots(t)
	api := c.API()
	signIn(t, ctx, c)

	j, err := api.CreateJob(t.Context(), map[string]any{"name": "browser backfill", "type": "ping",
		"payload": map[string]any{"url": c.APIURL + "/healthz"}, "schedule": map[string]any{"cron": "0 * * * *"}})
	if err != nil {
		t.Fatal(err)
	}
	// A range that ends in the future is refused, and the page says which
	// field is wrong.
	var refused, invalid string
	within(t, ctx, 30*time.Second,
		page(c.APIURL, "#/jobs/"+j.ID),
		chromedp.WaitVisible(chromedp.CSS("#backfill-form")),
		eval(`(() => { const el = document.querySelector('#backfill-to'); el.value = localInput(new Date(Date.now() + 7200000));
			el.dispatchEvent(new Event('input', {bubbles: true})); return null; })()`, new(any)),
		chromedp.Click(chromedp.CSS("#backfill-submit")),
		chromedp.WaitVisible(chromedp.CSS("#backfill-error")),
		eval(`document.querySelector('#backfill-error').textContent`, &refused),
		eval(`document.querySelector('#backfill-to').getAttribute('aria-invalid')`, &invalid),
	)
	if !strings.HasPrefix(refused, "To: ") || invalid != "true" {
		t.Fatalf("a range ending in the future shows %q, the field aria-invalid=%q", refused, invalid)
	}
	// The range is set in the browser's own time zone, as a person types it:
	// [the start of this hour - 3 h, the start of this hour).
	var progress string
	within(t, ctx, 30*time.Second,
		eval(`(() => { const to = new Date(); to.setMinutes(0, 0, 0);
			for (const [sel, d] of [['#backfill-from', new Date(to - 3 * 3600000)], ['#backfill-to', to]]) {
				const el = document.querySelector(sel); el.value = localInput(d);
				el.dispatchEvent(new Event('input', {bubbles: true})); }
			return null; })()`, new(any)),
		chromedp.Click(chromedp.CSS("#backfill-submit")),
		chromedp.WaitVisible(chromedp.CSS("#backfill-done")),
		chromedp.WaitNotPresent(chromedp.CSS("#backfill-error")),
		chromedp.WaitVisible(chromedp.CSS("#backfills tr.backfill")),
		eval(`document.querySelector('#backfills tr.backfill .progress').textContent`, &progress),
		shot(t, dir, "backfill.png"),
	)
	if !strings.Contains(progress, " of 3 queued") {
		t.Fatalf("the backfill shows progress %q, want 3 occurrences", progress)
	}

	var status string
	within(t, ctx, 10*time.Second, eval(`document.querySelector('#backfills tr.backfill').dataset.status`, &status))
	if status == "running" {
		// It may complete before the confirmation: a 409 then says so,
		// and the list shows it completed.
		within(t, ctx, 30*time.Second,
			chromedp.Click(chromedp.CSS("#backfills tr.backfill button.danger")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-yes")),
			chromedp.Click(chromedp.CSS("#confirm-yes")),
			chromedp.WaitVisible(chromedp.CSS(`#backfills tr.backfill:not([data-status="running"])`)),
			eval(`document.querySelector('#backfills tr.backfill').dataset.status`, &status),
			shot(t, dir, "backfill-cancelled.png"),
		)
	}
	var list struct {
		Backfills []struct {
			Status string `json:"status"`
			Total  int    `json:"total"`
		} `json:"backfills"`
	}
	if code, err := api.Do(t.Context(), http.MethodGet, "/api/v1/jobs/"+j.ID+"/backfills", nil, &list); err != nil || code != http.StatusOK {
		t.Fatalf("list backfills: %d, %v", code, err)
	}
	if len(list.Backfills) != 1 || list.Backfills[0].Total != 3 || list.Backfills[0].Status != status ||
		(status != "cancelled" && status != "completed") {
		t.Fatalf("the page shows the backfill %s; the API lists %+v", status, list.Backfills)
	}
}

// TestDashboardCalendars creates a calendar that skips every day from the
// Calendars page, sees a bad date refused on its line, sees the next runs
// of a recurring job that names the calendar struck out with the reason,
// and deletes the calendar: refused while the job can still run, done once
// it is cancelled.
func TestDashboardCalendars(t *testing.T) {
	ctx := browse(t)
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	dir := screenshots(t)
	api := c.API()
	signIn(t, ctx, c)
	row := `#calendars tr.calendar[data-name="every-day"]`

	// A date and a rule with an occurrence every day: every day is off,
	// whatever today is.
	var saved, cells string
	within(t, ctx, 30*time.Second,
		page(c.APIURL, "#/calendars"),
		chromedp.WaitVisible(chromedp.CSS("#calendars td.empty")),
		setField("#cal-name", "every-day"),
		setField("#cal-timezone", "UTC"),
		setField("#cal-dates", "2026-12-25"),
		setField("#cal-rrules", "FREQ=DAILY"),
		chromedp.Click(chromedp.CSS("#calendar-save")),
		chromedp.WaitVisible(chromedp.CSS("#calendar-saved")),
		chromedp.WaitVisible(chromedp.CSS(row)),
		eval(`document.querySelector('#calendar-saved').textContent`, &saved),
		eval(`[...document.querySelectorAll('`+row+` td')].slice(0, 5).map(td => td.textContent).join('|')`, &cells),
		shot(t, dir, "calendars.png"),
	)
	if !strings.Contains(saved, "every-day created") || cells != "every-day|UTC|1|0|1" {
		t.Fatalf("after saving, the page says %q and lists %q", saved, cells)
	}

	// A bad date is refused on the dates, naming its line (the third: a
	// blank line is no date), and stays so across the page's refresh.
	var shown, invalid, described, kept string
	var listed int
	within(t, ctx, 30*time.Second,
		setField("#cal-name", "bad-days"),
		setField("#cal-dates", "2026-12-25\n\n2026-02-30"),
		chromedp.Click(chromedp.CSS("#calendar-save")),
		chromedp.WaitVisible(chromedp.CSS("#cal-dates-error")),
		chromedp.Sleep(2500*time.Millisecond),
		chromedp.WaitVisible(chromedp.CSS("#cal-dates-error")),
		eval(`document.querySelector('#cal-dates-error').textContent`, &shown),
		eval(`document.querySelector('#cal-dates').getAttribute('aria-invalid')`, &invalid),
		eval(`document.querySelector('#cal-dates').getAttribute('aria-describedby')`, &described),
		eval(`document.querySelector('#cal-dates').value`, &kept),
		eval(`document.querySelectorAll('#calendars tr.calendar').length`, &listed),
		shot(t, dir, "calendar-error.png"),
	)
	if shown != "Dates, line 3: must be a day written YYYY-MM-DD" || invalid != "true" ||
		!strings.Contains(described, "cal-dates-error") || kept != "2026-12-25\n\n2026-02-30" || listed != 1 {
		t.Fatalf("a bad date shows %q (aria-invalid=%q, described by %q), the field keeps %q, %d calendars listed",
			shown, invalid, described, kept, listed)
	}

	// On a phone the list is cards and nothing scrolls sideways.
	var scroll, width int
	within(t, ctx, 20*time.Second,
		chromedp.EmulateViewport(390, 844),
		page(c.APIURL, "#/calendars"),
		chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.Sleep(300*time.Millisecond),
		eval(`document.documentElement.scrollWidth`, &scroll),
		eval(`window.innerWidth`, &width),
		shot(t, dir, "mobile-calendars.png"),
		chromedp.EmulateViewport(1280, 900),
	)
	if scroll > width {
		t.Fatalf("#/calendars at 390 px: the page is %d px wide, wider than the %d px viewport", scroll, width)
	}

	j, err := api.CreateJob(t.Context(), map[string]any{"name": "browser calendar", "type": "ping",
		"payload": map[string]any{"url": c.APIURL + "/healthz"}, "schedule": map[string]any{"cron": "0 9 * * *"},
		"skip_calendars": []string{"every-day"}})
	if err != nil {
		t.Fatal(err)
	}
	// Its page names the calendar, and every next occurrence is skipped.
	var reasons []string
	var runs, struck int
	var link, dates string
	within(t, ctx, 30*time.Second,
		page(c.APIURL, "#/jobs/"+j.ID),
		chromedp.WaitVisible(chromedp.CSS("#next-runs li.next-skipped")),
		eval(`[...document.querySelectorAll('#next-runs li.next-skipped')].map(li => li.querySelector('.badge').textContent + ' ' + li.querySelector('.reason').textContent)`, &reasons),
		eval(`document.querySelectorAll('#next-runs li.next-skipped s').length`, &struck),
		eval(`document.querySelectorAll('#next-runs li:not(.next-skipped):not(.more-skipped):not(.empty)').length`, &runs),
		eval(`document.querySelector('#skip-calendars a').getAttribute('href')`, &link),
		shot(t, dir, "calendar-skipped-runs.png"),
		chromedp.Click(chromedp.CSS("#skip-calendars a")),
		chromedp.WaitVisible(chromedp.CSS("#calendar-detail #calendar-dates")),
		eval(`document.querySelector('#calendar-dates').textContent`, &dates),
	)
	if len(reasons) == 0 || struck != len(reasons) || runs != 0 || link != "#/calendars?name=every-day" || dates != "2026-12-25" {
		t.Fatalf("the job page shows %d runs, skipped %q (%d struck out), links %q; the calendar's dates are %q",
			runs, reasons, struck, link, dates)
	}
	for _, r := range reasons {
		if !strings.HasPrefix(r, `skipped calendar every-day: `) {
			t.Fatalf("a skipped next run shows %q", r)
		}
	}
	// Its edit form holds the calendar, and previews the skipped runs too.
	var named string
	within(t, ctx, 30*time.Second,
		page(c.APIURL, "#/jobs/"+j.ID+"/edit"),
		chromedp.WaitVisible(chromedp.CSS("#preview li.next-skipped")),
		eval(`document.querySelector('#skip_calendars').value`, &named),
	)
	if named != "every-day" {
		t.Fatalf("the edit form's skip calendars are %q", named)
	}

	// Deleting it is refused while the job can still run, and says why.
	var refused string
	within(t, ctx, 30*time.Second,
		page(c.APIURL, "#/calendars"),
		chromedp.WaitVisible(chromedp.CSS(row+" button.delete-calendar")),
		chromedp.Click(chromedp.CSS(row+" button.delete-calendar")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-yes")),
		chromedp.Click(chromedp.CSS("#confirm-yes")),
		chromedp.WaitVisible(chromedp.CSS("#calendars-error")),
		eval(`document.querySelector('#calendars-error').textContent`, &refused),
		chromedp.WaitVisible(chromedp.CSS(row)),
		shot(t, dir, "calendar-in-use.png"),
	)
	if !strings.Contains(refused, "Could not delete every-day") || !strings.Contains(refused, "skip_calendars") {
		t.Fatalf("deleting a calendar in use shows %q", refused)
	}

	if code, err := api.Do(t.Context(), http.MethodDelete, "/api/v1/jobs/"+j.ID, nil, nil); err != nil || code >= 300 {
		t.Fatalf("cancel the job: %d, %v", code, err)
	}
	var done string
	within(t, ctx, 30*time.Second,
		chromedp.Click(chromedp.CSS(row+" button.delete-calendar")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-yes")),
		chromedp.Click(chromedp.CSS("#confirm-yes")),
		chromedp.WaitVisible(chromedp.CSS("#calendar-deleted")),
		chromedp.WaitNotPresent(chromedp.CSS("#calendars-error")),
		chromedp.WaitVisible(chromedp.CSS("#calendars td.empty")),
		eval(`document.querySelector('#calendar-deleted').textContent`, &done),
	)
	var list struct {
		Calendars []struct {
			Name string `json:"name"`
		} `json:"calendars"`
	}
	if code, err := api.Do(t.Context(), http.MethodGet, "/api/v1/calendars", nil, &list); err != nil || code != http.StatusOK || len(list.Calendars) != 0 {
		t.Fatalf("after %q the API lists %+v (%d, %v)", done, list.Calendars, code, err)
	}
}
