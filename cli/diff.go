package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// change is one field whose value in a schedules file differs from the
// server's. Old or New is nil when that side has no value.
type change struct {
	Field string `json:"field"`
	Old   any    `json:"old"`
	New   any    `json:"new"`
}

func (c change) String() string {
	return fmt.Sprintf("%s: %s → %s", c.Field, show(c.Old), show(c.New))
}

// show writes a JSON value compactly, "(none)" for no value.
func show(v any) string {
	if v == nil {
		return "(none)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// diffJob compares the fields a file gives for a job (want, as JSON values)
// with the server's view of it (have, as JSON values). Only the fields want
// gives are compared, each as the server echoes it: durations as Go
// durations ("90d" is "2160h0m0s"), instants as instants, a schedule's
// subfields one by one (the server fills in every default), a weekday by its
// full name. Payload, notify and labels are compared whole, since a PUT
// replaces them as a whole. delay is never compared: it is relative to the
// moment of creation.
func diffJob(want, have map[string]any) []change {
	var out []change
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w, h := want[k], have[k]
		switch k {
		case "key", "delay":
		case "timeout", "retention", "expires_after":
			if !sameDuration(w, h) {
				out = append(out, change{k, h, w})
			}
		case "run_at":
			if !sameInstant(w, h) {
				out = append(out, change{k, h, w})
			}
		case "run_on":
			if c, ok := diffRunOn(w, want["timezone"], have["run_at"]); !ok {
				out = append(out, c)
			}
		case "schedule":
			out = append(out, diffSchedule(w, h)...)
		case "payload", "notify", "labels":
			out = diffWhole(k, w, h, out)
		default:
			if !same(w, h) {
				out = append(out, change{k, h, w})
			}
		}
	}
	return out
}

// diffSchedule compares the subfields the file's schedule gives.
func diffSchedule(w, h any) []change {
	ws, _ := w.(map[string]any)
	hs, _ := h.(map[string]any)
	if hs == nil || ws == nil {
		if same(w, h) {
			return nil
		}
		return []change{{"schedule", h, w}}
	}
	var out []change
	for _, k := range slices.Sorted(maps.Keys(ws)) {
		wv, hv := ws[k], hs[k]
		var eq bool
		switch k {
		case "rrule":
			eq = same(trimRRule(wv), trimRRule(hv))
		case "cron", "every":
			eq = same(lowerTrim(wv), lowerTrim(hv))
		case "at":
			eq = same(fullTime(wv), fullTime(hv))
		case "on":
			eq = same(weekday(wv), weekday(hv))
		case "start_at", "end_at":
			eq = sameInstant(wv, hv)
		case "dst":
			wd, _ := wv.(map[string]any)
			hd, _ := hv.(map[string]any)
			eq = true
			for dk, dv := range wd {
				eq = eq && same(dv, hd[dk])
			}
		default:
			eq = same(wv, hv)
		}
		if !eq {
			out = append(out, change{"schedule." + k, hv, wv})
		}
	}
	return out
}

// diffWhole lists every leaf that differs between w and h, under field.
func diffWhole(field string, w, h any, out []change) []change {
	wm, wok := w.(map[string]any)
	hm, hok := h.(map[string]any)
	if !wok || !hok {
		if !same(w, h) {
			if secret(field, w) || secret(field, h) {
				w, h = hidden(w), hidden(h)
			}
			out = append(out, change{field, h, w})
		}
		return out
	}
	keys := slices.Collect(maps.Keys(wm))
	for k := range hm {
		if _, ok := wm[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = diffWhole(field+"."+k, wm[k], hm[k], out)
	}
	return out
}

// diffRunOn compares a one-off job's date (local midnight in tz) with the
// server's run_at.
func diffRunOn(date, tz, runAt any) (change, bool) {
	d, _ := date.(string)
	zone, _ := tz.(string)
	if zone == "" {
		zone = "UTC"
	}
	c := change{"run_on", runAt, date}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return c, false
	}
	day, err := time.ParseInLocation(time.DateOnly, d, loc)
	if err != nil {
		return c, false
	}
	at, ok := instant(runAt)
	if ok {
		c.Old = at.In(loc).Format(time.DateOnly)
	}
	return c, ok && at.Equal(day)
}

// same compares JSON values, an absent value equal to a zero one (the
// server leaves zero values out).
func same(a, b any) bool {
	return reflect.DeepEqual(a, b) || (zero(a) && zero(b))
}

func zero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

func sameDuration(a, b any) bool {
	as, _ := a.(string)
	bs, _ := b.(string)
	da, errA := parseDuration(as)
	db, errB := parseDuration(bs)
	if errA != nil || errB != nil {
		return same(a, b)
	}
	return da == db
}

func sameInstant(a, b any) bool {
	ta, okA := instant(a)
	tb, okB := instant(b)
	if !okA || !okB {
		return same(a, b)
	}
	return ta.Equal(tb)
}

func instant(v any) (time.Time, bool) {
	s, _ := v.(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
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

// trimRRule writes an RRULE as the server keeps it: upper case, without
// blanks, the "RRULE:" prefix or a trailing ";".
func trimRRule(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	s = strings.ToUpper(strings.Join(strings.Fields(s), ""))
	s = strings.TrimPrefix(s, "RRULE:")
	return strings.TrimSuffix(s, ";")
}

// lowerTrim compares text as the server keeps a cron or an every: without
// blanks around it, any case.
func lowerTrim(v any) any {
	if s, ok := v.(string); ok {
		return strings.ToLower(strings.TrimSpace(s))
	}
	return v
}

// fullTime writes "09:30" as "09:30:00".
func fullTime(v any) any {
	if s, ok := v.(string); ok && len(s) == 5 {
		return s + ":00"
	}
	return v
}

var weekdays = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

// weekday writes a weekday as the server does: "Mon" and "mon" are "monday".
func weekday(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	s = strings.ToLower(s)
	for _, d := range weekdays {
		if len(s) >= 3 && strings.HasPrefix(d, s) {
			return d
		}
	}
	return s
}

// secret reports whether the value at field may hold a secret that a diff,
// often printed in a CI log, must not show: a header value (an
// Authorization, an API key), a Slack webhook URL (the URL is the
// credential), or a URL carrying a user or password (a broker's).
func secret(field string, v any) bool {
	if strings.Contains(field, ".headers.") || strings.HasSuffix(field, "webhook_url") {
		return true
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.User != nil
}

// hidden stands for a secret value in a diff: the change shows, the value
// does not.
func hidden(v any) any {
	if v == nil {
		return nil
	}
	return "(hidden)"
}
