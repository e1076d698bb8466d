package check

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// kinds are the only kinds the chart may render, by apiVersion and kind,
// each with the Go type of the API that serves it.
var kinds = map[string]func() any{
	"apps/v1 Deployment":                      func() any { return new(appsv1.Deployment) },
	"v1 Service":                              func() any { return new(corev1.Service) },
	"policy/v1 PodDisruptionBudget":           func() any { return new(policyv1.PodDisruptionBudget) },
	"batch/v1 Job":                            func() any { return new(batchv1.Job) },
	"autoscaling/v2 HorizontalPodAutoscaler":  func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"monitoring.coreos.com/v1 ServiceMonitor": func() any { return new(monitoringv1.ServiceMonitor) },
	"keda.sh/v1alpha1 ScaledObject":           func() any { return new(ScaledObject) },
	"keda.sh/v1alpha1 TriggerAuthentication":  func() any { return new(TriggerAuthentication) },
}

// Object is one rendered manifest decoded into its API type.
type Object struct {
	Kind, Name string
	// Value is a pointer to the typed object, such as *appsv1.Deployment.
	Value any
}

// separator is the line between two YAML documents.
var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Decode splits helm's output into documents and decodes each strictly, as
// the API server's strict field validation would: a field the type does
// not have, a field in the wrong case or twice, an unknown kind, or a name
// the API would refuse is an error.
func Decode(manifests string) ([]Object, error) {
	var out []Object
	var errs []error
	for _, doc := range separator.Split(manifests, -1) {
		data, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", source(doc), err))
			continue
		}
		if string(data) == "null" { // only comments
			continue
		}
		obj, err := decode(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", source(doc), err))
			continue
		}
		out = append(out, obj)
	}
	return out, errors.Join(errs...)
}

func decode(data []byte) (Object, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.UnmarshalCaseSensitivePreserveInts(data, &head); err != nil {
		return Object{}, err
	}
	newValue, ok := kinds[head.APIVersion+" "+head.Kind]
	if !ok {
		return Object{}, fmt.Errorf("%s %s: not a kind the chart may render", head.APIVersion, head.Kind)
	}
	value := newValue()
	strict, err := json.UnmarshalStrict(data, value, json.DisallowDuplicateFields, json.DisallowUnknownFields)
	if err != nil {
		return Object{}, err
	}
	if len(strict) > 0 {
		return Object{}, fmt.Errorf("%s %s: %w", head.Kind, head.Metadata.Name, errors.Join(strict...))
	}
	// Services name DNS records, so their names are the stricter labels.
	check := validation.IsDNS1123Subdomain
	if head.Kind == "Service" {
		check = validation.IsDNS1035Label
	}
	if problems := check(head.Metadata.Name); len(problems) > 0 {
		return Object{}, fmt.Errorf("%s %q: %s", head.Kind, head.Metadata.Name, strings.Join(problems, "; "))
	}
	return Object{Kind: head.Kind, Name: head.Metadata.Name, Value: value}, nil
}

// source is the template a document came from, from helm's "# Source:" line.
func source(doc string) string {
	for line := range strings.Lines(doc) {
		if s, ok := strings.CutPrefix(line, "# Source: "); ok {
			return strings.TrimSpace(s)
		}
	}
	return "a document"
}
