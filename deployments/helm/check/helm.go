package check

import (
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// Release and Namespace are what the chart is rendered as.
const (
	Release   = "tock"
	Namespace = "tock"
)

// KubeVersion is the Kubernetes release whose API types the manifests are
// decoded into: k8s.io/api v0.N in this module's go.mod (read from the
// directory the tests run in) is Kubernetes 1.N. Helm renders for it; as a
// library it would otherwise claim Kubernetes 1.20, a version that helm's own
// build replaces through linker flags.
func KubeVersion() (*chartutil.KubeVersion, error) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		return nil, err
	}
	m := apiRequirement.FindSubmatch(mod)
	if m == nil {
		return nil, errors.New("go.mod requires no k8s.io/api v0.N.x")
	}
	return chartutil.ParseKubeVersion("v1." + string(m[1]) + ".0")
}

var apiRequirement = regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.([0-9]+)\.`)

// Values merges value files as helm's -f does: a later file's maps merge
// into an earlier's, and any other value replaces.
func Values(files ...string) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return nil, err
		}
		out = mergeMaps(out, v)
	}
	return out, nil
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// Lint is `helm lint --strict -f file...`: helm's chart, values, schema
// and template rules, a warning failing as an error does.
func Lint(chart string, valueFiles ...string) error {
	vals, err := Values(valueFiles...)
	if err != nil {
		return err
	}
	kube, err := KubeVersion()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range lint.AllWithKubeVersionAndSchemaValidation(chart, vals, Namespace, kube, false).Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, m)
		}
	}
	return errors.Join(errs...)
}

// Template is `helm template tock <chart> -f file...`: the manifests, then
// the hooks, as helm prints them. It takes the steps of helm's client-only
// install (pkg/action's Install and renderResources, which would bring in
// client-go and the registry clients): the chart's kubeVersion, the values
// coalesced and checked against values.schema.json, the templates rendered,
// NOTES.txt set aside, the rest sorted into manifests and hooks.
func Template(chart string, valueFiles ...string) (string, error) {
	ch, err := loader.Load(chart)
	if err != nil {
		return "", err
	}
	vals, err := Values(valueFiles...)
	if err != nil {
		return "", err
	}
	kube, err := KubeVersion()
	if err != nil {
		return "", err
	}
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kube.String()) {
		return "", fmt.Errorf("chart requires kubeVersion %s, incompatible with Kubernetes %s", c, kube)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kube
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: Release, Namespace: Namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return "", err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return "", err
	}
	delete(files, path.Join(ch.Name(), "templates", "NOTES.txt"))
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	for _, h := range hooks {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return out.String(), nil
}
