// Package web holds the browser dashboard's assets. They are embedded so the
// dashboard binary serves them with no files on disk and no separate deploy;
// for now the only asset is a placeholder page pointing at the JSON API.
package web

import (
	"embed"
	"io/fs"
)

//go:embed index.html
var assets embed.FS

// FS returns the assets, rooted so that "index.html" is the home page.
func FS() fs.FS { return assets }
