package web_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/tockhq/tock/web"
)

func TestFS(t *testing.T) {
	t.Parallel()
	read := func(t *testing.T, name string) string {
		t.Helper()
		b, err := fs.ReadFile(web.FS(), name)
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		return string(b)
	}
	t.Run("IndexLoadsScriptAndStyle", func(t *testing.T) {
		t.Parallel()
		index := read(t, "index.html")
		for _, want := range []string{"/ui/app.js", "/ui/app.css", "/api/v1"} {
			if !strings.Contains(index, want) {
				t.Fatalf("index.html does not mention %s", want)
			}
		}
	})
	t.Run("ScriptUsesTheAPIWithTheCSRFHeader", func(t *testing.T) {
		t.Parallel()
		js := read(t, "app.js")
		for _, want := range []string{"/api/v1/", "X-Tock-CSRF", "/ui/session"} {
			if !strings.Contains(js, want) {
				t.Fatalf("app.js does not mention %s", want)
			}
		}
		// The session lives in an HttpOnly cookie, never in script-readable storage.
		for _, banned := range []string{"localStorage", "sessionStorage", "document.cookie", "innerHTML"} {
			if strings.Contains(js, banned) {
				t.Fatalf("app.js uses %s", banned)
			}
		}
	})
}
