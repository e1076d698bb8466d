package check

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// chart is the chart under test.
const chart = "../tock"

// profiles are the value files the chart is linted and rendered with: its
// defaults, and the profiles its README documents.
var profiles = []struct {
	name  string
	files []string
	kinds []string // besides 3 Deployments, 3 Services, 3 PDBs and the migration Job
}{
	{"default", nil, []string{"HorizontalPodAutoscaler"}},
	{"small", []string{chart + "/profiles/small.yaml"}, []string{"HorizontalPodAutoscaler"}},
	{"50m-redis-cluster-pgbouncer", []string{chart + "/profiles/50m-redis-cluster-pgbouncer.yaml"},
		[]string{"ScaledObject", "TriggerAuthentication", "ServiceMonitor"}},
}

// render is `helm template` with the value files, decoded strictly and
// checked for sanity.
func render(t *testing.T, files ...string) []Object {
	t.Helper()
	out, err := Template(chart, files...)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatalf("decoding the manifests strictly: %v", err)
	}
	if err := Sane(objs); err != nil {
		t.Fatal(err)
	}
	return objs
}

// overlay writes values to a file, for helm's -f, as a user would.
func overlay(t *testing.T, values map[string]any) string {
	t.Helper()
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func find[T any](objs []Object) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.Value.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func deployment(t *testing.T, objs []Object, component string) *appsv1.Deployment {
	t.Helper()
	for _, d := range find[*appsv1.Deployment](objs) {
		if d.Name == Release+"-"+component {
			return d
		}
	}
	t.Fatalf("no Deployment %s-%s", Release, component)
	return nil
}

// env is a container's environment by name.
func env(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

// TestProfiles lints and renders the defaults and each documented profile:
// every manifest decodes strictly into its API type, and the set of kinds is
// the one the profile promises.
func TestProfiles(t *testing.T) {
	for _, p := range profiles {
		t.Run(p.name, func(t *testing.T) {
			if err := Lint(chart, p.files...); err != nil {
				t.Errorf("helm lint --strict: %v", err)
			}
			objs := render(t, p.files...)
			var got []string
			for _, o := range objs {
				got = append(got, o.Kind)
			}
			want := append([]string{"Deployment", "Deployment", "Deployment", "Service", "Service", "Service",
				"PodDisruptionBudget", "PodDisruptionBudget", "PodDisruptionBudget", "Job"}, p.kinds...)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("kinds rendered: %v, want %v", got, want)
			}
			checkMigration(t, objs)
		})
	}
}

// checkMigration: the job runs a dashboard with the dashboard's settings as
// a sidecar that must be ready before the job's own container runs.
func checkMigration(t *testing.T, objs []Object) {
	t.Helper()
	jobs := find[*batchv1.Job](objs)
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs, want the migration's", len(jobs))
	}
	pod := jobs[0].Spec.Template.Spec
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("migration pod: %d init containers and %d containers, want 1 and 1", len(pod.InitContainers), len(pod.Containers))
	}
	side := pod.InitContainers[0]
	if side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Error("the migrating dashboard is not a native sidecar (restartPolicy: Always)")
	}
	if side.StartupProbe == nil || side.StartupProbe.HTTPGet == nil || side.StartupProbe.HTTPGet.Path != "/readyz" {
		t.Error("the migrating dashboard has no startup probe on /readyz")
	}
	if args := pod.Containers[0].Args; !slices.Equal(args, []string{"healthcheck"}) {
		t.Errorf("the job's container runs %v, want [healthcheck]", args)
	}
	dash := env(deployment(t, objs, "dashboard").Spec.Template.Spec.Containers[0])
	for name, e := range env(side) {
		if name == "TOCK_HTTP_ADDR" || name == "GOMEMLIMIT" {
			continue
		}
		if fmt.Sprint(dash[name]) != fmt.Sprint(e) {
			t.Errorf("migration's %s = %v, the dashboard's %v", name, e, dash[name])
		}
	}
	if len(env(side)) != len(dash) {
		t.Errorf("migration has %d variables, the dashboard %d", len(env(side)), len(dash))
	}
}

// TestKEDAStreams: a trigger per shard, naming the shard's stream as
// pkg/queue tags it, with its share of the backlog target: the 50M profile's
// four shards on a cluster, and one Redis server with the defaults.
func TestKEDAStreams(t *testing.T) {
	single := overlay(t, map[string]any{"worker": map[string]any{"autoscaling": map[string]any{
		"keda": map[string]any{"enabled": true, "address": "redis:6379"}}}})
	for _, c := range []struct {
		file          string
		shards        int
		want          map[string]string // metadata besides the stream
		typ           string
		authenticated bool
	}{
		{chart + "/profiles/50m-redis-cluster-pgbouncer.yaml", 4, map[string]string{
			"addresses": "redis-cluster:6379", "streamLength": "125", "enableTLS": "false"}, "redis-cluster-streams", true},
		{single, 1, map[string]string{
			"address": "redis:6379", "streamLength": "500", "enableTLS": "false", "databaseIndex": "0"}, "redis-streams", false},
	} {
		so := find[*ScaledObject](render(t, c.file))[0]
		var streams []string
		for _, tr := range so.Spec.Triggers {
			streams = append(streams, tr.Metadata["stream"])
			meta := maps.Clone(tr.Metadata)
			delete(meta, "stream")
			if tr.Type != c.typ || !maps.Equal(meta, c.want) || (tr.AuthenticationRef != nil) != c.authenticated {
				t.Errorf("trigger %s %v (authenticated: %v), want %s %v (%v)", tr.Type, meta, tr.AuthenticationRef != nil, c.typ, c.want, c.authenticated)
			}
		}
		var want []string
		for _, tag := range shardTags(t)[fmt.Sprint(c.shards)] {
			want = append(want, fmt.Sprintf("tock:{%s}:ready", tag))
		}
		if !slices.Equal(streams, want) {
			t.Errorf("streams %v, want %v", streams, want)
		}
	}
}

// TestRefused: values that would break the deployment fail the render,
// saying what to set instead.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"config": map[string]any{"TOCK_METRICS_ADDR": "0.0.0.0:1"}}, "set by the chart from dashboard.ports.metrics"},
		{map[string]any{"worker": map[string]any{"config": map[string]any{"TOCK_SHUTDOWN_GRACE": "1m"}}}, "worker.shutdownGraceSeconds"},
		{map[string]any{"worker": map[string]any{"config": map[string]any{"TOCK_REDIS_SHARDS": 2}}}, "must be the same in every service"},
		{map[string]any{"secretEnv": map[string]any{"TOCK_LOG_LEVEL": map[string]any{"name": "s", "key": "k"}}}, "in both config and secretEnv"},
		{map[string]any{"worker": map[string]any{"autoscaling": map[string]any{"keda": map[string]any{"enabled": true}}}}, "worker.autoscaling.keda.address"},
		{map[string]any{"config": map[string]any{"TOCK_REDIS_SHARDS": 65},
			"worker": map[string]any{"autoscaling": map[string]any{"keda": map[string]any{"enabled": true, "address": "redis:6379"}}}}, "up to 64 shards"},
		{map[string]any{"config": map[string]any{"TOCK_REDIS_SHARDS": 300}}, "TOCK_REDIS_SHARDS"},
	} {
		_, err := Template(chart, overlay(t, c.values))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %v: error %v, want one saying %q", c.values, err, c.want)
		}
	}
}
