package check

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// readme is the README whose Configuration table lists every setting.
const readme = "../../../README.md"

// sharedOnly are the settings the chart takes from config alone: every
// service must agree on them, and the KEDA trigger reads them.
var sharedOnly = []string{"TOCK_REDIS_PREFIX", "TOCK_REDIS_SHARDS", "TOCK_REDIS_CLUSTER", "TOCK_REDIS_ADDRS"}

// owned are the settings the chart derives from other values, since the
// pods depend on them: each with those values and what it becomes.
var owned = map[string]struct {
	values map[string]any
	want   map[string]string // by service
}{
	"TOCK_METRICS_ADDR": {
		map[string]any{
			"dashboard": map[string]any{"ports": map[string]any{"metrics": 19090}},
			"scheduler": map[string]any{"ports": map[string]any{"metrics": 19091}},
			"worker":    map[string]any{"ports": map[string]any{"metrics": 19092}},
		},
		map[string]string{"dashboard": "0.0.0.0:19090", "scheduler": "0.0.0.0:19091", "worker": "0.0.0.0:19092"},
	},
	"TOCK_HTTP_ADDR": {
		map[string]any{"dashboard": map[string]any{"ports": map[string]any{"http": 18080}}},
		map[string]string{"dashboard": "0.0.0.0:18080"},
	},
	"TOCK_SHUTDOWN_GRACE": {
		map[string]any{"worker": map[string]any{"shutdownGraceSeconds": 40}},
		map[string]string{"worker": "40s"},
	},
}

// samples are values the schema constrains, or that a template could
// print wrongly (a number is a float64 to Helm); the rest get their name.
var samples = map[string]any{"TOCK_REDIS_SHARDS": 4, "TOCK_REDIS_CLUSTER": true, "TOCK_MAX_BATCH_BODY_BYTES": 33554432, "TOCK_PPROF": true}
var sampleText = map[string]string{"TOCK_REDIS_SHARDS": "4", "TOCK_REDIS_CLUSTER": "true", "TOCK_MAX_BATCH_BODY_BYTES": "33554432", "TOCK_PPROF": "true"}

// TestSettingsReachable proves that every variable of README's
// Configuration table can be set through values, and reaches exactly the
// services the table says use it: as a plain value in config (shared when
// every service uses it, else each service's own), and as a key of a Secret
// in secretEnv; the chart's own settings through the values they follow.
func TestSettingsReachable(t *testing.T) {
	settings, err := ReadSettings(readme)
	if err != nil {
		t.Fatal(err)
	}
	if len(settings) < 60 {
		t.Fatalf("read %d settings from %s: the table's format changed", len(settings), readme)
	}
	plain := map[string]any{"secretEnv": nil}
	secret := map[string]any{"config": nil}
	for _, s := range Services {
		plain[s] = map[string]any{"config": map[string]any{}, "secretEnv": nil}
		secret[s] = map[string]any{"secretEnv": map[string]any{}}
	}
	set := func(values map[string]any, key string, s Setting, v any) {
		if len(s.Services) == len(Services) {
			if values[key] == nil {
				values[key] = map[string]any{}
			}
			values[key].(map[string]any)[s.Name] = v
			return
		}
		for _, svc := range s.Services {
			values[svc].(map[string]any)[key].(map[string]any)[s.Name] = v
		}
	}
	for _, s := range settings {
		if _, ok := owned[s.Name]; ok {
			continue
		}
		v, ok := samples[s.Name]
		if !ok {
			v = "set-" + s.Name
		}
		set(plain, "config", s, v)
		if !slices.Contains(sharedOnly, s.Name) {
			set(secret, "secretEnv", s, map[string]any{"name": "tock-test", "key": s.Name})
		}
	}

	t.Run("config", func(t *testing.T) {
		objs := render(t, overlay(t, plain))
		for _, s := range settings {
			if _, ok := owned[s.Name]; ok {
				continue
			}
			want, ok := sampleText[s.Name]
			if !ok {
				want = "set-" + s.Name
			}
			expect(t, objs, s, func(e corev1.EnvVar) bool { return e.Value == want && e.ValueFrom == nil })
		}
	})
	t.Run("secretEnv", func(t *testing.T) {
		objs := render(t, overlay(t, secret))
		for _, s := range settings {
			if _, ok := owned[s.Name]; ok || slices.Contains(sharedOnly, s.Name) {
				continue
			}
			expect(t, objs, s, func(e corev1.EnvVar) bool {
				ref := e.ValueFrom
				return ref != nil && ref.SecretKeyRef != nil && ref.SecretKeyRef.Name == "tock-test" && ref.SecretKeyRef.Key == s.Name
			})
		}
	})
	for name, o := range owned {
		t.Run(name, func(t *testing.T) {
			objs := render(t, overlay(t, o.values))
			for svc, want := range o.want {
				got := env(deployment(t, objs, svc).Spec.Template.Spec.Containers[0])[name]
				if got.Value != want {
					t.Errorf("%s of the %s: %q, want %q", name, svc, got.Value, want)
				}
			}
		})
	}
}

// expect checks that a setting is in the environment of the services that
// use it, as ok says, and absent from the others'.
func expect(t *testing.T, objs []Object, s Setting, ok func(corev1.EnvVar) bool) {
	t.Helper()
	for _, svc := range Services {
		e, found := env(deployment(t, objs, svc).Spec.Template.Spec.Containers[0])[s.Name]
		switch used := slices.Contains(s.Services, svc); {
		case used && !found:
			t.Errorf("%s is not in the %s's environment", s.Name, svc)
		case used && !ok(e):
			t.Errorf("%s of the %s: %+v", s.Name, svc, e)
		case !used && found:
			t.Errorf("%s reaches the %s, which does not use it", s.Name, svc)
		}
	}
}
