//go:build !linux

package schedule

import "time"

// threadCPU is not measured outside Linux: the bound is then not checked.
func threadCPU() time.Duration { return 0 }
