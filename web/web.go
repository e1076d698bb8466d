// Package web holds the browser dashboard's assets: one HTML page, its
// script and its stylesheet, with no build step and no third-party code.
// They are embedded so the dashboard binary serves them with no files on
// disk and no separate deploy.
package web

import (
	"embed"
	"io/fs"
)

//go:embed index.html app.js app.css
var assets embed.FS

// FS returns the assets, rooted so that "index.html" is the home page.
func FS() fs.FS { return assets }
