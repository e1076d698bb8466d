package check

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the chart's files/shard-tags.yaml")

// root is the repository's top directory, which holds go.work.
const root = "../../.."

// TestShardTags: the chart's table of shard tags is what pkg/queue computes.
// testdata/shardtags prints it, built in the repository's workspace with the
// generator added, so this module need not require pkg (whose every
// dependency change would then need a go mod tidy here) and the build uses
// the versions and checksums that make test uses.
func TestShardTags(t *testing.T) {
	gen, err := filepath.Abs("testdata/shardtags")
	if err != nil {
		t.Fatal(err)
	}
	work := workspace(t, gen)
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = gen
	cmd.Env = append(os.Environ(), "GOWORK="+work)
	cmd.Stderr = os.Stderr
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run testdata/shardtags: %v", err)
	}
	path := chart + "/files/shard-tags.yaml"
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from pkg/queue's tags: go test -run TestShardTags -update", path)
	}
}

// workspace writes a copy of the repository's go.work, and its go.work.sum,
// that also uses the module in dir, and returns the copy's path.
func workspace(t *testing.T, dir string) string {
	t.Helper()
	top, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "work", "edit", "-json", filepath.Join(top, "go.work"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var w struct {
		Go  string
		Use []struct{ DiskPath string }
	}
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("go " + w.Go + "\n\nuse (\n")
	for _, u := range w.Use {
		b.WriteString("\t" + filepath.Join(top, u.DiskPath) + "\n")
	}
	b.WriteString("\t" + dir + "\n)\n")
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "go.work"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(top, "go.work.sum"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.work.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(tmp, "go.work")
}

// shardTags is the chart's table of tags by shard count, which
// TestShardTags holds to pkg/queue's.
func shardTags(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(chart + "/files/shard-tags.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tags map[string][]string
	if err := yaml.UnmarshalStrict(data, &tags); err != nil {
		t.Fatal(err)
	}
	return tags
}
