package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSDKInstallsAsDocsSay follows docs/sdk.md's install block word for
// word, in a new module outside the workspace with the repository as its
// "../tock", and builds a program that uses the SDK.
func TestSDKInstallsAsDocsSay(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(repo, "docs", "sdk.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Install.*?```sh\n(.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/sdk.md has no sh block under ## Install")
	}
	dir := t.TempDir()
	// The checkout beside the user's module, as the docs assume it.
	if err := os.Symlink(repo, filepath.Join(dir, "tock")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "main.go"), []byte(`package main

import (
	"fmt"

	tock "github.com/tockhq/tock/sdk/go"
)

func main() { fmt.Println(tock.New("http://127.0.0.1:8080", "token") != nil) }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(line string) {
		t.Helper()
		args := strings.Fields(line)
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = app
		// Outside the workspace, as in a user's own repository.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	run("go mod init example.com/app")
	var steps int
	for _, line := range strings.Split(string(block[1]), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			run(line)
			steps++
		}
	}
	if steps == 0 {
		t.Fatal("docs/sdk.md's install block has no command")
	}
	run("go build -o " + filepath.Join(dir, "app.bin") + " .")
	out, err := exec.Command(filepath.Join(dir, "app.bin")).Output()
	if err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Fatalf("the program built against the SDK printed %q, %v", out, err)
	}
}
