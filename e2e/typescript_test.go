package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTypeScript runs the TypeScript SDK's tests (sdk/typescript, node's own
// test runner) against the real services: its unit tests against a fake,
// then create and the job's run, runs and stats, put by key, list by label
// over pages, a bulk dry run, a backfill started, read, listed and
// cancelled, calendars put, read, listed, previewed and deleted, a typed 400
// and 403, and a create whose answer a proxy replaced with a 503, retried to
// exactly one job, with the same Idempotency-Key on both tries as the proxy
// saw. First it installs the SDK's tools from the committed lockfile when
// they are missing or older than it, checks that the generated types match
// sdk/go/openapi.json, and builds the SDK; last it installs the packed SDK
// into a new project, as sdk/typescript/README.md says, and runs
// examples/quickstart.mjs there, which that README shows.
func TestTypeScript(t *testing.T) {
	sdk, err := filepath.Abs(filepath.Join("..", "sdk", "typescript"))
	require.NoError(t, err)
	requireNode(t)
	if fresh, why := npmInstalled(sdk); !fresh {
		t.Logf("npm ci in sdk/typescript: %s", why)
		runNPM(t, sdk, nil, "npm", "ci")
	}
	runNPM(t, sdk, nil, "npm", "run", "check-generated")
	runNPM(t, sdk, nil, "npm", "run", "build")

	proxy, env := clientServices(t)
	runNPM(t, sdk, env, "node", "--test", "--test-reporter=spec")

	keys := proxy.tries("POST /api/v1/jobs")
	require.Len(t, keys, 2, "the TypeScript client retried the 503 once")
	require.NotEmpty(t, keys[0])
	require.Equal(t, keys[0], keys[1], "the retry carries the same Idempotency-Key")

	t.Run("Quickstart", func(t *testing.T) {
		dir := t.TempDir()
		// Already built: prepack's build would only repeat it.
		runNPM(t, sdk, nil, "npm", "pack", "--ignore-scripts", "--loglevel=warn", "--pack-destination", dir)
		tarballs, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
		require.NoError(t, err)
		require.Len(t, tarballs, 1)
		app := filepath.Join(dir, "app")
		require.NoError(t, os.Mkdir(app, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name": "app", "private": true}`), 0o644))
		runNPM(t, app, nil, "npm", "install", tarballs[0])
		example, err := os.ReadFile(filepath.Join(sdk, "examples", "quickstart.mjs"))
		require.NoError(t, err)
		readme, err := os.ReadFile(filepath.Join(sdk, "README.md"))
		require.NoError(t, err)
		require.Contains(t, string(readme), "```js\n"+string(example)+"```", "sdk/typescript/README.md shows examples/quickstart.mjs as it is")
		top, err := os.ReadFile(filepath.Join(sdk, "..", "..", "README.md"))
		require.NoError(t, err)
		require.Contains(t, string(top), "```js\n"+string(example)+"```", "README.md shows examples/quickstart.mjs as it is")
		require.NoError(t, os.WriteFile(filepath.Join(app, "quickstart.mjs"), example, 0o644))
		out := runNPM(t, app, env, "node", "quickstart.mjs")
		require.Equal(t, "nightly scheduled\nhello scheduled\n400 invalid schedule.cron\n", out,
			"the jobs newest first, then the refusal's status, code and field")
	})
}

// requireNode fails the test, saying what to install, without Node.js 20.3
// or later (the SDK uses AbortSignal.any) and npm.
func requireNode(t *testing.T) {
	t.Helper()
	const need = "the TypeScript SDK's tests need Node.js 20.3 or later and npm (Debian: apt-get install nodejs npm)"
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: %s", tool, need)
		}
	}
	out, err := exec.Command("node", "-p", "process.versions.node").Output()
	require.NoError(t, err)
	var major, minor int
	if _, err := fmt.Sscanf(string(out), "%d.%d", &major, &minor); err != nil || major < 20 || major == 20 && minor < 3 {
		t.Fatalf("node %s: %s", strings.TrimSpace(string(out)), need)
	}
}

// npmInstalled says whether sdk's node_modules holds what package-lock.json
// asks for: npm writes node_modules/.package-lock.json at each install, so
// one older than the lockfile (or none) means the tools must be installed.
func npmInstalled(sdk string) (bool, string) {
	lock, err := os.Stat(filepath.Join(sdk, "package-lock.json"))
	if err != nil {
		return false, err.Error()
	}
	installed, err := os.Stat(filepath.Join(sdk, "node_modules", ".package-lock.json"))
	switch {
	case err != nil:
		return false, "node_modules is missing"
	case installed.ModTime().Before(lock.ModTime()):
		return false, "node_modules is older than package-lock.json"
	}
	return true, ""
}

// runNPM is runTool without npm's audit, funding and update notices: each
// would ask the registry, or print, for nothing the test uses. It returns
// the command's standard output.
func runNPM(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, _ := runTool(t, dir, append([]string{"npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false"}, env...), name, args...)
	return out
}
