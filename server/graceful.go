package server

// gracefulDelete reports whether r's objects are deleted gracefully: in
// kube, whether its strategy is a rest.RESTGracefulDeleteStrategy. Of the
// resources served, only pods are.
func (r *resource) gracefulDelete() bool {
	return r.crd == "" && r.group == "" && r.plural == "pods"
}

// defaultTerminationGracePeriod is the spec.terminationGracePeriodSeconds
// kube's defaulting gives a pod that sets none.
const defaultTerminationGracePeriod = 30

// podGracePeriod is kube's podStrategy.CheckGracefulDelete
// (k8s.io/kubernetes/pkg/registry/core/pod/strategy.go), to be replaced by
// it: the grace period, in seconds, that a DELETE asking for requested
// (nil: none asked) gives pod. A pod not bound to a node, or whose phase is
// Succeeded or Failed, goes at once (0); otherwise the request's period,
// else the pod's spec.terminationGracePeriodSeconds, else kube's default
// of 30 (kube defaults the field on create, which this server does not);
// a negative period is 1.
func podGracePeriod(pod *doc, requested *int64) int64 {
	var spec struct {
		NodeName                      string `json:"nodeName"`
		TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds"`
	}
	var status struct {
		Phase string `json:"phase"`
	}
	pod.field("spec", &spec)
	pod.field("status", &status)
	period := int64(defaultTerminationGracePeriod)
	switch {
	case requested != nil:
		period = *requested
	case spec.TerminationGracePeriodSeconds != nil:
		period = *spec.TerminationGracePeriodSeconds
	}
	if spec.NodeName == "" || status.Phase == "Failed" || status.Phase == "Succeeded" {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	return period
}
