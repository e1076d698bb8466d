package jobspec

import (
	"encoding/json"
	"fmt"
)

// Schema is an OpenAPI object schema of a job as requests of mode give it
// (JobSpec for Create and Replace, JobPatch for Patch) or as views show it
// (view): its properties and required fields from Fields. Each request
// property carries its two valid values (x-tock-examples), from which a
// test can set and change every field without listing them.
func Schema(mode Mode, view bool) (properties map[string]any, required []string, err error) {
	properties = map[string]any{}
	for _, f := range Fields {
		src := f.Schema
		switch {
		case view && f.show != nil:
			src = f.ViewSchema
		case view || !f.Input(mode):
			continue
		}
		var s map[string]any
		if err := json.Unmarshal([]byte(src), &s); err != nil {
			return nil, nil, fmt.Errorf("schema of %s: %w", f.Name, err)
		}
		if !view && f.Example != "" {
			ex := []any{}
			for _, v := range []string{f.Example, f.Other} {
				if v == "" {
					continue
				}
				var x any
				if err := json.Unmarshal([]byte(v), &x); err != nil {
					return nil, nil, fmt.Errorf("example of %s: %w", f.Name, err)
				}
				ex = append(ex, x)
			}
			s["x-tock-examples"] = ex
		}
		if !view && f.Default != "" {
			var d any
			if err := json.Unmarshal([]byte(f.Default), &d); err == nil {
				if _, isRef := s["$ref"]; !isRef {
					s["default"] = d
				}
			}
		}
		properties[f.Name] = s
		switch {
		case view && !f.Omittable:
			required = append(required, f.Name)
		case !view && f.Required && mode != Patch:
			required = append(required, f.Name)
		}
	}
	return properties, required, nil
}
