// Package docscheck holds the test that keeps README.md and docs/ true to
// the tree: every relative link, and every file path they name, exists.
package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// link is a Markdown link's target: [text](target).
	link = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// code is an inline code span, which may name a path.
	code = regexp.MustCompile("`([^`\\s]+)`")
	// pathLike is a code span that names a file of the project by its path:
	// a directory and a name with one of the extensions the tree holds.
	pathLike = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/[A-Za-z0-9_.-]+\.(go|md|sql|sh|tf|json|ya?ml|lua|js|css|html|txt|mod)$`)
)

// root is the repository's top directory: the one holding go.work.
func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the test's directory")
		}
		dir = parent
	}
}

// pages are README.md and every Markdown file under docs/.
func pages(t *testing.T, top string) []string {
	t.Helper()
	out := []string{filepath.Join(top, "README.md")}
	err := filepath.WalkDir(filepath.Join(top, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestDocsNameWhatExists fails on a relative link, or a file path in
// backquotes, that names nothing in the tree: a page that moved, a file
// renamed by a refactoring, a document that was never added.
func TestDocsNameWhatExists(t *testing.T) {
	top := root(t)
	links, paths := 0, 0
	for _, page := range pages(t, top) {
		body, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(top, page)
		dir := filepath.Dir(page)
		for _, m := range link.FindAllStringSubmatch(string(body), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			links++
			if !exists(filepath.Join(dir, target)) {
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
			}
		}
		for _, m := range code.FindAllStringSubmatch(string(body), -1) {
			p := m[1]
			if !pathLike.MatchString(p) {
				continue
			}
			paths++
			if !exists(filepath.Join(top, p)) && !exists(filepath.Join(dir, p)) {
				t.Errorf("%s names %s, which does not exist", rel, p)
			}
		}
	}
	t.Logf("checked %d relative links and %d file paths", links, paths)
	if links < 10 || paths < 10 {
		t.Errorf("only %d links and %d paths found: the patterns no longer match the pages", links, paths)
	}
}
