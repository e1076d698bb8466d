package job

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Debounce folds a burst of creates into one delivery: a one-off job
// created with a key while another of its owner's one-off jobs with that
// key is pending (scheduled and not started) is not created; the pending
// job takes its payload and its due time (now plus Window, unless the
// create gave its own timing) instead, keeping its id. Keys are per owner.
type Debounce struct {
	Key    string
	Window time.Duration
}

// Debounce key and window bounds.
const (
	MaxDebounceKeyLen = 200
	MinDebounceWindow = 10 * time.Millisecond
	MaxDebounceWindow = 24 * time.Hour
)

// debounceJSON is a Debounce as the API and the jobs.debounce column hold it.
type debounceJSON struct {
	Key    string `json:"key"`
	Window string `json:"window"`
}

// MarshalJSON writes {"key", "window"}, the window as a Go duration
// without its zero units ("3s", "1h", "1m30s").
func (d Debounce) MarshalJSON() ([]byte, error) {
	return json.Marshal(debounceJSON{Key: d.Key, Window: shortDuration(d.Window)})
}

// shortDuration is d as time.Duration.String writes it, less the zero
// minutes and seconds that follow a unit ("1h0m0s" is "1h").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Debounce) UnmarshalJSON(b []byte) error {
	var in debounceJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	w, err := time.ParseDuration(in.Window)
	if err != nil {
		return fmt.Errorf("debounce window %q: %w", in.Window, err)
	}
	d.Key, d.Window = in.Key, w
	return nil
}

// DebounceKey is the job's debounce key, "" for none.
func (j *Job) DebounceKey() string {
	if j.Debounce == nil {
		return ""
	}
	return j.Debounce.Key
}
