package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// The namespace lifecycle, as kube's namespace strategy and storage have
// it: a namespace is created with the "kubernetes" finalizer in
// spec.finalizers; DELETE marks it Terminating (namespace.go); the
// namespace controller empties it and removes "kubernetes" with a PUT on
// the finalize subresource; any write that leaves a terminating namespace
// with neither spec.finalizers nor metadata.finalizers removes it.

// finalizerKubernetes is the spec finalizer of the namespace controller.
const finalizerKubernetes = "kubernetes"

// standardFinalizers may be named without a domain prefix (kube's
// IsStandardFinalizerName).
var standardFinalizers = []string{finalizerKubernetes, "orphan", "foregroundDeletion"}

func (r *resource) isNamespaces() bool { return r.group == "" && r.plural == "namespaces" }

// specFinalizers returns a namespace's spec.finalizers.
func specFinalizers(d *doc) []string {
	var spec struct {
		Finalizers []string `json:"finalizers"`
	}
	d.field("spec", &spec)
	return spec.Finalizers
}

// setSpecFinalizers replaces spec.finalizers of d, keeping the rest of its
// spec; nil or empty removes the field.
func setSpecFinalizers(d *doc, fins []string) {
	var spec map[string]json.RawMessage
	if !d.field("spec", &spec) || spec == nil {
		spec = map[string]json.RawMessage{}
	}
	if len(fins) == 0 {
		delete(spec, "finalizers")
	} else {
		b, _ := json.Marshal(fins)
		spec["finalizers"] = b
	}
	d.setField("spec", spec)
}

// ensureKubernetesFinalizer appends "kubernetes" to a new namespace's
// spec.finalizers unless present, as kube's strategy PrepareForCreate does.
func ensureKubernetesFinalizer(d *doc) {
	fins := specFinalizers(d)
	if !slices.Contains(fins, finalizerKubernetes) {
		setSpecFinalizers(d, append(fins, finalizerKubernetes))
	}
}

// namespaceFinalized: no finalizer of either kind is left on d.
func namespaceFinalized(d *doc) bool {
	var fins []string
	if raw, ok := d.meta["finalizers"]; ok {
		_ = json.Unmarshal(raw, &fins)
	}
	return len(specFinalizers(d)) == 0 && len(fins) == 0
}

// prepareNamespace applies kube's namespace strategies to d, old being the
// stored namespace (nil on create): a new one is Active with the
// kubernetes finalizer; an update keeps the stored status, and the stored
// spec.finalizers unless it is a write to /finalize.
func (c *call) prepareNamespace(d, old *doc) {
	setNameLabel(d)
	if old == nil {
		d.setField("status", map[string]string{"phase": "Active"})
		ensureKubernetesFinalizer(d)
		return
	}
	if st, ok := old.rest["status"]; ok {
		d.rest["status"] = st
	} else {
		delete(d.rest, "status")
	}
	if !c.finalize {
		setSpecFinalizers(d, specFinalizers(old))
	}
}

// labelMetadataName is the label kube's strategy gives every namespace,
// its name, so that selectors can pick namespaces by name.
const labelMetadataName = "kubernetes.io/metadata.name"

// setNameLabel sets d's kubernetes.io/metadata.name label to its name,
// on every write, as kube's namespace strategy Canonicalize does.
func setNameLabel(d *doc) {
	var labels map[string]string
	if raw, ok := d.meta["labels"]; ok && json.Unmarshal(raw, &labels) != nil {
		return // not a map of strings: validation answers it
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[labelMetadataName] = d.metaString("name")
	d.setMeta("labels", labels)
}

// validateNamespaceFinalizers is kube's ValidateNamespaceFinalizeUpdate
// for spec.finalizers: each is a qualified name, and one without a
// domain is a standard one.
func (c *call) validateNamespaceFinalizers(d *doc) error {
	var causes []wire.StatusCause
	for i, f := range specFinalizers(d) {
		field := fmt.Sprintf("spec.finalizers[%d]", i)
		if err := object.ValidateLabelKey(f); err != nil {
			causes = append(causes, fieldInvalid(field, f, err.Error()))
			continue
		}
		if !strings.Contains(f, "/") && !slices.Contains(standardFinalizers, f) {
			causes = append(causes, fieldInvalid(field, f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	if len(causes) > 0 {
		return invalid(c.res.qualifiedKind(), c.res.group, c.res.kind, c.name, causes...)
	}
	return nil
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
