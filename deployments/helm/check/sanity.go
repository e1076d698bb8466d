package check

import (
	"errors"
	"fmt"
	"slices"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Sane checks what strict decoding cannot: that every pod is probed, runs
// non-root on a read-only root with resources requested, and that every
// selector and reference finds what it names, as they would in a cluster.
func Sane(objs []Object) error {
	var errs []error
	fail := func(o Object, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %s: %s", o.Kind, o.Name, fmt.Sprintf(format, args...)))
	}
	deployments := map[string]*appsv1.Deployment{}
	var services []*corev1.Service
	for _, o := range objs {
		switch v := o.Value.(type) {
		case *appsv1.Deployment:
			deployments[v.Name] = v
			if v.Spec.Selector == nil || !labels.SelectorFromSet(v.Spec.Selector.MatchLabels).Matches(labels.Set(v.Spec.Template.Labels)) {
				fail(o, "its selector does not match its pods")
			}
			for _, c := range v.Spec.Template.Spec.Containers {
				if c.LivenessProbe == nil || c.ReadinessProbe == nil {
					fail(o, "container %s lacks a liveness or readiness probe", c.Name)
				}
			}
			for _, p := range podProblems(v.Spec.Template.Spec) {
				fail(o, "%s", p)
			}
		case *batchv1.Job:
			for _, p := range podProblems(v.Spec.Template.Spec) {
				fail(o, "%s", p)
			}
		case *corev1.Service:
			services = append(services, v)
		}
	}
	for _, s := range services {
		if d := selected(deployments, s.Spec.Selector); d == nil {
			errs = append(errs, fmt.Errorf("Service %s selects no Deployment", s.Name))
		} else {
			for _, p := range s.Spec.Ports {
				if !hasPort(d.Spec.Template.Spec.Containers, p.TargetPort.StrVal) {
					errs = append(errs, fmt.Errorf("Service %s: target port %q is not a port of %s", s.Name, p.TargetPort.StrVal, d.Name))
				}
			}
		}
	}
	for _, o := range objs {
		switch v := o.Value.(type) {
		case *policyv1.PodDisruptionBudget:
			if selected(deployments, v.Spec.Selector.MatchLabels) == nil {
				fail(o, "selects no Deployment")
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			if deployments[v.Spec.ScaleTargetRef.Name] == nil {
				fail(o, "scales %s, which is not rendered", v.Spec.ScaleTargetRef.Name)
			}
		case *ScaledObject:
			if deployments[v.Spec.ScaleTargetRef.Name] == nil {
				fail(o, "scales %s, which is not rendered", v.Spec.ScaleTargetRef.Name)
			}
			for _, tr := range v.Spec.Triggers {
				for key := range tr.Metadata {
					if !slices.Contains(redisStreamsMetadata, key) {
						fail(o, "trigger %s: KEDA's redis streams scalers read no %q", tr.Type, key)
					}
				}
			}
		case *monitoringv1.ServiceMonitor:
			n := 0
			for _, s := range services {
				if labels.SelectorFromSet(v.Spec.Selector.MatchLabels).Matches(labels.Set(s.Labels)) {
					n++
				}
			}
			if n == 0 {
				fail(o, "selects no Service")
			}
		}
	}
	return errors.Join(errs...)
}

// redisStreamsMetadata are the trigger metadata KEDA's redis-streams and
// redis-cluster-streams scalers read (v2.21, pkg/scalers/redis_streams_scaler.go
// and redis_scaler.go): a ScaledObject's metadata is a map of strings that
// strict decoding cannot check, and KEDA ignores a name it does not know.
var redisStreamsMetadata = []string{
	"address", "addresses", "host", "hosts", "port", "ports", "username", "password",
	"databaseIndex", "enableTLS", "unsafeSsl", "stream", "consumerGroup",
	"pendingEntriesCount", "streamLength", "lagCount", "activationLagCount",
}

// podProblems are a pod's departures from how tock's pods must run: as a
// non-root user, on a read-only root, without privilege escalation, with
// CPU and memory requested.
func podProblems(pod corev1.PodSpec) []string {
	var out []string
	podNonRoot := pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		sc := c.SecurityContext
		if !(podNonRoot || sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) {
			out = append(out, fmt.Sprintf("container %s may run as root", c.Name))
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			out = append(out, fmt.Sprintf("container %s has a writable root filesystem", c.Name))
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			out = append(out, fmt.Sprintf("container %s may escalate privileges", c.Name))
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
			out = append(out, fmt.Sprintf("container %s requests no CPU or no memory", c.Name))
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil && p.HTTPGet != nil && !hasPort([]corev1.Container{c}, p.HTTPGet.Port.StrVal) {
				out = append(out, fmt.Sprintf("container %s probes port %q, which it does not declare", c.Name, p.HTTPGet.Port.String()))
			}
		}
	}
	return out
}

// selected is the Deployment whose pods a selector matches, or nil.
func selected(deployments map[string]*appsv1.Deployment, selector map[string]string) *appsv1.Deployment {
	for _, d := range deployments {
		if len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			return d
		}
	}
	return nil
}

func hasPort(containers []corev1.Container, name string) bool {
	for _, c := range containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}
