package server

import (
	"encoding/json"
	"net/http"
)

// The namespace lifecycle, as kube's namespace strategy and storage have
// it: a namespace is created with the "kubernetes" finalizer in
// spec.finalizers; DELETE marks it Terminating (namespace.go); the
// namespace controller empties it and removes "kubernetes" with a PUT on
// the finalize subresource; any write that leaves a terminating namespace
// with neither spec.finalizers nor metadata.finalizers removes it. The
// finalizer, label, status and /finalize rules themselves are kube's
// namespace strategies, run by admit (kinds.go).

func (r *resource) isNamespaces() bool { return r.group == "" && r.plural == "namespaces" }

// specFinalizers returns a namespace's spec.finalizers.
func specFinalizers(d *doc) []string {
	var spec struct {
		Finalizers []string `json:"finalizers"`
	}
	d.field("spec", &spec)
	return spec.Finalizers
}

// namespaceFinalized: no finalizer of either kind is left on d.
func namespaceFinalized(d *doc) bool {
	var fins []string
	if raw, ok := d.meta["finalizers"]; ok {
		_ = json.Unmarshal(raw, &fins)
	}
	return len(specFinalizers(d)) == 0 && len(fins) == 0
}

// finalizeNamespace answers PUT /api/v1/namespaces/NAME/finalize: an
// update of the namespace that may change spec.finalizers (the other
// writes keep the stored ones) and never status.
func (c *call) finalizeNamespace() error {
	if c.r.Method != http.MethodPut {
		return methodNotAllowed()
	}
	return c.update()
}
