package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// readDoc reads a JSON or YAML file ("-": standard input) as JSON.
func readDoc(file string, stdin io.Reader) ([]byte, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	j, err := yamlToJSON(b)
	if err != nil {
		return nil, usagef("read %s: %v", displayName(file), err)
	}
	return j, nil
}

func displayName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

// yamlToJSON reads one YAML document (JSON is YAML too) as JSON. It reads
// YAML 1.2, where on, yes and no are strings, not booleans: "on:" is a
// field of notify and of a schedule. A timestamp or date stays the text it
// was written as, a label's value is always a string (customer: 1234), and
// merge keys (<<: *defaults) are followed, so entries can share settings.
func yamlToJSON(b []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 {
		return nil, fmt.Errorf("is empty")
	}
	v, err := nodeValue(&doc, false)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// nodeValue turns a YAML node into a JSON value; asText keeps scalars as
// their text (label values).
func nodeValue(n *yaml.Node, asText bool) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0], asText)
	case yaml.AliasNode:
		return nodeValue(n.Alias, asText)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c, false)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		if err := mergeMapping(out, n, asText); err != nil {
			return nil, err
		}
		return out, nil
	}
	// A scalar.
	if asText && n.Tag != "!!null" {
		return n.Value, nil
	}
	switch n.Tag {
	case "!!null":
		return nil, nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return n.Value, nil
}

// mergeMapping adds n's pairs to out: first those of its merge keys, then
// its own, which win.
func mergeMapping(out map[string]any, n *yaml.Node, asText bool) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag != "!!merge" {
			continue
		}
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		srcs := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			srcs = v.Content
		}
		for _, src := range srcs {
			if src.Kind == yaml.AliasNode {
				src = src.Alias
			}
			if src.Kind != yaml.MappingNode {
				return fmt.Errorf("line %d: << wants a mapping", v.Line)
			}
			if err := mergeMapping(out, src, asText); err != nil {
				return err
			}
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: a key must be a plain value", k.Line)
		}
		val, err := nodeValue(v, asText || k.Value == "labels")
		if err != nil {
			return err
		}
		out[k.Value] = val
	}
	return nil
}

// strict decodes JSON into v, refusing fields v does not have, so that a
// misspelt field in a file is an error rather than silently dropped.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// jobFlags are the job fields a command line may give, over -f's.
type jobFlags struct {
	file                                             string
	name, typ, payload, url                          string
	cron, rrule, every, at, tz                       string
	runAt, delay, runOn                              string
	timeout, retention, history, expires, jitter, ov string
	key, debounce, debounceWindow                    string
	lateAfter, silentAfter                           string
	priority, maxRetries                             int
	labels, skipCalendars                            []string
}

// register adds the flags to cmd; create adds those only a new job has.
func (f *jobFlags) register(cmd *cobra.Command, create bool) {
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "job as JSON or YAML (- for standard input); flags override its fields")
	fl.StringVar(&f.name, "name", "", "job name")
	if create {
		fl.StringVar(&f.typ, "type", "", "job type: webhook, ping, slack, email, nats, amqp or sqs")
		fl.StringVar(&f.key, "key", "", "your own unique name for the job")
		fl.StringVar(&f.debounce, "debounce", "", "one-off: debounce key; a create while a job with it has not started folds into that job")
		fl.StringVar(&f.debounceWindow, "debounce-window", "", "with --debounce: run this long after the last create (3s)")
	}
	fl.StringVar(&f.payload, "payload", "", "payload as JSON")
	fl.StringVar(&f.url, "target", "", "shorthand for the payload's url (webhook, ping)")
	fl.StringVar(&f.cron, "cron", "", "recurring: cron expression")
	fl.StringVar(&f.rrule, "rrule", "", "recurring: RRULE, such as FREQ=WEEKLY;BYDAY=MO;BYHOUR=9")
	fl.StringVar(&f.every, "every", "", "recurring: day, week or month (with --at)")
	fl.StringVar(&f.at, "at", "", "with --every: local time of day, HH:MM")
	fl.StringVar(&f.tz, "tz", "", "IANA time zone of the schedule (or of --run-on)")
	fl.StringVar(&f.runAt, "run-at", "", "one-off: RFC 3339 instant")
	fl.StringVar(&f.delay, "delay", "", "one-off: run this long from now (90s, 2h30m, 15d)")
	fl.StringVar(&f.runOn, "run-on", "", "one-off: local midnight of this date (YYYY-MM-DD) in --tz")
	fl.IntVar(&f.priority, "priority", 0, "priority, -32768..32767")
	fl.IntVar(&f.maxRetries, "max-retries", 3, "retries after a failed attempt")
	fl.StringVar(&f.timeout, "timeout", "", "limit on one attempt (30s)")
	fl.StringVar(&f.retention, "retention", "", "how long the finished job is kept (90d)")
	fl.StringVar(&f.history, "history", "", "runs kept: all or failures")
	fl.StringVar(&f.expires, "expires-after", "", "record an attempt that cannot start this late as expired (15m)")
	fl.StringVar(&f.jitter, "jitter", "", "spread jobs due at the same time: each occurrence is due up to this much later, by an offset of the job's own (60s)")
	fl.StringVar(&f.ov, "overlap", "", "recurring: allow, skip or buffer_one")
	fl.StringArrayVar(&f.skipCalendars, "skip-calendar", nil, "recurring: do not run on the days of this calendar of yours (repeatable; replaces the job's list)")
	fl.StringVar(&f.lateAfter, "slo-late-after", "", "SLO: alert when an occurrence starts later than this (500ms); \"\" removes it")
	fl.StringVar(&f.silentAfter, "slo-silent-after", "", "SLO, recurring: alert when none completes for this long (10m); \"\" removes it")
	fl.StringArrayVar(&f.labels, "label", nil, "label key=value (repeatable; replaces the job's labels)")
}

// fields reads -f (if given) and lays the flags that were set over it.
func (f *jobFlags) fields(cmd *cobra.Command, stdin io.Reader) (map[string]any, error) {
	m := map[string]any{}
	if f.file != "" {
		b, err := readDoc(f.file, stdin)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil || m == nil {
			return nil, fmt.Errorf("read %s: want one job object", f.file)
		}
	}
	set := func(flag, field string, v any) {
		if cmd.Flags().Changed(flag) {
			m[field] = v
		}
	}
	set("name", "name", f.name)
	set("type", "type", f.typ)
	set("key", "key", f.key)
	set("run-at", "run_at", f.runAt)
	set("delay", "delay", f.delay)
	set("run-on", "run_on", f.runOn)
	set("priority", "priority", f.priority)
	set("max-retries", "max_retries", f.maxRetries)
	set("timeout", "timeout", f.timeout)
	set("retention", "retention", f.retention)
	set("history", "history", f.history)
	set("expires-after", "expires_after", f.expires)
	set("jitter", "jitter", f.jitter)
	set("overlap", "overlap", f.ov)
	set("skip-calendar", "skip_calendars", f.skipCalendars)
	if cmd.Flags().Changed("slo-late-after") || cmd.Flags().Changed("slo-silent-after") {
		slo, _ := m["slo"].(map[string]any)
		if slo == nil {
			slo = map[string]any{}
		}
		for flag, field := range map[string]string{"slo-late-after": "late_after", "slo-silent-after": "silent_after"} {
			if !cmd.Flags().Changed(flag) {
				continue
			}
			v, _ := cmd.Flags().GetString(flag)
			if v == "" {
				delete(slo, field)
			} else {
				slo[field] = v
			}
		}
		m["slo"] = slo
	}
	if cmd.Flags().Changed("debounce") || cmd.Flags().Changed("debounce-window") {
		d, _ := m["debounce"].(map[string]any)
		if d == nil {
			d = map[string]any{}
		}
		set := func(flag, field, v string) {
			if cmd.Flags().Changed(flag) {
				d[field] = v
			}
		}
		set("debounce", "key", f.debounce)
		set("debounce-window", "window", f.debounceWindow)
		m["debounce"] = d
	}
	if cmd.Flags().Changed("payload") {
		var p any
		if err := json.Unmarshal([]byte(f.payload), &p); err != nil {
			return nil, usagef("--payload is not JSON: %v", err)
		}
		m["payload"] = p
	}
	if cmd.Flags().Changed("target") {
		p, _ := m["payload"].(map[string]any)
		if p == nil {
			p = map[string]any{}
		}
		p["url"] = f.url
		m["payload"] = p
	}
	if cmd.Flags().Changed("label") {
		labels := map[string]any{}
		for _, l := range f.labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok || k == "" {
				return nil, usagef("--label wants key=value, not %q", l)
			}
			labels[k] = v
		}
		m["labels"] = labels
	}
	sched, _ := m["schedule"].(map[string]any)
	for flag, field := range map[string]string{"cron": "cron", "rrule": "rrule", "every": "every", "at": "at"} {
		if cmd.Flags().Changed(flag) {
			if sched == nil {
				sched = map[string]any{}
			}
			v, _ := cmd.Flags().GetString(flag)
			sched[field] = v
		}
	}
	if sched != nil {
		m["schedule"] = sched
	}
	if cmd.Flags().Changed("tz") {
		if sched != nil {
			sched["timezone"] = f.tz
		} else {
			m["timezone"] = f.tz
		}
	}
	return m, nil
}
