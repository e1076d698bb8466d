package web_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/tockhq/tock/web"
)

func TestFS(t *testing.T) {
	t.Parallel()
	t.Run("ServesPlaceholderIndex", func(t *testing.T) {
		t.Parallel()
		b, err := fs.ReadFile(web.FS(), "index.html")
		if err != nil {
			t.Fatalf("read index.html: %v", err)
		}
		if !strings.Contains(string(b), "/api/v1") {
			t.Fatalf("index.html does not point at the API: %s", b)
		}
	})
}
