package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// shown writes one side of a change as the server gave it: compact JSON,
// "(none)" for no value. A secret is its fingerprint already.
func shown(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return "(none)"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return string(v)
	}
	return buf.String()
}

// parseDuration reads a Go duration optionally preceded by whole days, as
// the API does: "90s", "2h30m", "15d", "1d12h". "" is zero.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil {
			return 0, fmt.Errorf("duration %q: %w", s, err)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	return days + d, err
}
