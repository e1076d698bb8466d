package service

import (
	"os"
	"runtime/debug"
)

// SetGCPercent sets the process's garbage-collection target to percent
// unless the GOGC environment variable sets one: an operator's GOGC (or
// GOMEMLIMIT, which the runtime honours alongside) always wins.
func SetGCPercent(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}
