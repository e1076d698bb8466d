package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPython runs the Python client's tests (sdk/python, python3 -m
// unittest) against the real services: its unit tests against a fake and the
// generator's, then create and the job's run, runs and stats, put by key,
// list by label over pages, a bulk dry run, a backfill started, read, listed
// and cancelled, calendars put, read, listed, previewed and deleted, a typed
// 400 and 403, and a create whose answer a proxy replaced with a 503,
// retried to exactly one job, with the same Idempotency-Key on both tries as
// the proxy saw. First it checks that the generated types match
// sdk/go/openapi.json; last it installs the client with pip, as
// sdk/python/README.md says, and runs examples/quickstart.py with that
// install.
func TestPython(t *testing.T) {
	sdk, err := filepath.Abs(filepath.Join("..", "sdk", "python"))
	require.NoError(t, err)
	requirePython(t)
	runPython(t, sdk, nil, "scripts/generate.py", "--check")

	proxy, env := clientServices(t)
	// unittest reports on standard error. With the services up no test may
	// skip: a skip means the environment did not reach the tests.
	_, report := runPython(t, sdk, append(env, "PYTHONPATH="+filepath.Join(sdk, "src")),
		"-m", "unittest", "discover", "-s", "tests", "-v")
	require.NotContains(t, report, "skipped", "every Python test runs against the services")

	keys := proxy.tries("POST /api/v1/jobs")
	require.Len(t, keys, 2, "the Python client retried the 503 once")
	require.True(t, strings.HasPrefix(keys[0], "tock-py-"), "the client's own key: %q", keys[0])
	require.Equal(t, keys[0], keys[1], "the retry carries the same Idempotency-Key")

	t.Run("Quickstart", func(t *testing.T) {
		if out, err := exec.Command("python3", "-m", "pip", "--version").CombinedOutput(); err != nil {
			t.Fatalf("python3 -m pip: %v: %s(Debian: apt-get install python3-pip)", err, out)
		}
		site := t.TempDir()
		// What the README says, into a folder of the test's own rather than
		// the machine's packages; --no-index proves no index is needed.
		runPython(t, sdk, nil, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--quiet",
			"--root-user-action=ignore", "--target", site, ".")
		// Run from elsewhere, so that only the installed copy is importable.
		example := filepath.Join(sdk, "examples", "quickstart.py")
		code, err := os.ReadFile(example)
		require.NoError(t, err)
		top, err := os.ReadFile(filepath.Join(sdk, "..", "..", "README.md"))
		require.NoError(t, err)
		require.Contains(t, string(top), "```python\n"+string(code)+"```", "README.md shows examples/quickstart.py as it is")
		out, _ := runPython(t, t.TempDir(), append(env, "PYTHONPATH="+site), example)
		require.Equal(t, "nightly scheduled\nhello scheduled\n400 invalid schedule.cron\n", out,
			"the jobs newest first, then the refusal's status, code and field")
	})
}

// requirePython fails the test, saying what to install, without Python 3.11
// or later, the oldest the client supports.
func requirePython(t *testing.T) {
	t.Helper()
	const need = "the Python client's tests need python3, 3.11 or later (Debian: apt-get install python3)"
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 not found: %s", need)
	}
	out, err := exec.Command("python3", "-c", "import sys; print(sys.version.split()[0]); sys.exit(sys.version_info < (3, 11))").CombinedOutput()
	if err != nil {
		t.Fatalf("python3 %s: %s", strings.TrimSpace(string(out)), need)
	}
}

// runPython is runTool of python3, writing no bytecode (so no __pycache__
// is left in the tree) and unbuffered.
func runPython(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string) {
	t.Helper()
	return runTool(t, dir, append([]string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}, env...), "python3", args...)
}
