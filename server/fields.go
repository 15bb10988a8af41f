package server

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// predicate builds the storage.Predicate of a LIST, WATCH or
// DELETECOLLECTION from its selectors. Which selectors are valid, and the
// 400 for those that are not, are kube's: its own parsers read them
// (labels.Parse, fields.ParseSelector, as kube's ListOptions decoding
// does), and each field label goes through the kind's field label
// conversion, as kube's handlers do before listing. The selector matched
// against objects is the library's, parsed from kube's canonical form of
// what was accepted (FuzzSelectorsAsKube checks that it accepts every
// such form and matches as kube's does).
func predicate(r *resource, labelSel, fieldSel string) (storage.Predicate, error) {
	kl, err := labels.Parse(labelSel)
	if err != nil {
		return storage.Predicate{}, wire.NewBadRequest(err.Error())
	}
	kf, err := fields.ParseSelector(fieldSel)
	if err != nil {
		return storage.Predicate{}, wire.NewBadRequest(err.Error())
	}
	tf, err := kf.Transform(r.convertFieldLabel)
	if err != nil {
		return storage.Predicate{}, wire.NewBadRequest(err.Error())
	}
	if tf.Empty() {
		kf = fields.Everything() // "==" and the like: a term of nothing
	}
	ls, err := object.ParseLabelSelector(kl.String())
	if err != nil {
		return storage.Predicate{}, wire.NewInternalError(fmt.Errorf("label selector %q: %w", labelSel, err))
	}
	fs, err := object.ParseFieldSelector(kf.String())
	if err != nil {
		return storage.Predicate{}, wire.NewInternalError(fmt.Errorf("field selector %q: %w", fieldSel, err))
	}
	for _, f := range fs.Fields() {
		if f == "metadata.name" || f == "metadata.namespace" {
			continue
		}
		if _, ok := r.fields[f]; !ok {
			// kube's conversion accepts a field this server cannot
			// select on.
			return storage.Predicate{}, wire.NewBadRequest("field label not supported: " + f)
		}
	}
	p := storage.Predicate{Label: ls, Field: fs}
	if len(r.fields) > 0 && !fs.Empty() {
		p.Attrs = attrFunc(r.fields, r.fieldAbsent)
	}
	return p, nil
}

// convertFieldLabel is kube's field label conversion of r's kind: the
// scheme's conversion function for a built-in (each kind's own, or
// metadata.name and metadata.namespace only), and for a custom resource
// metadata.name, metadata.namespace when namespaced, and the CRD
// version's selectable fields. Its errors are kube's 400 messages.
func (r *resource) convertFieldLabel(label, value string) (string, string, error) {
	if t := r.typed(); t != nil {
		return t.scheme.ConvertFieldLabel(t.external, label, value)
	}
	switch {
	case label == "metadata.name", label == "metadata.namespace" && (r.namespaced || r.crd == ""):
		return label, value, nil
	}
	if _, ok := r.fields[label]; ok {
		return label, value, nil
	}
	if r.crd == "" {
		return "", "", fmt.Errorf("%q is not a known field selector: only %q, %q", label, "metadata.name", "metadata.namespace")
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}

// attrFunc extracts labels, metadata.name/namespace and the selectable
// fields given (name to path in the object) from a stored value. A field
// missing from the object has its value in absent if there is one there
// (kube's attributes come from the typed object, where a missing bool is
// "false" and a missing number "0"), else "". A field whose path is empty
// is never in the object.
func attrFunc(selectable map[string][]string, absent map[string]string) storage.AttrFunc {
	return func(value []byte) (map[string]string, map[string]string, error) {
		var obj map[string]any
		if err := json.Unmarshal(value, &obj); err != nil {
			return nil, nil, err
		}
		labels := map[string]string{}
		if m, ok := lookup(obj, []string{"metadata", "labels"}).(map[string]any); ok {
			for k, v := range m {
				labels[k], _ = v.(string)
			}
		}
		fields := make(map[string]string, len(selectable)+2)
		fields["metadata.name"] = scalarString(lookup(obj, []string{"metadata", "name"}))
		fields["metadata.namespace"] = scalarString(lookup(obj, []string{"metadata", "namespace"}))
		for f, path := range selectable {
			var v any
			if len(path) > 0 {
				v = lookup(obj, path)
			}
			if v == nil {
				fields[f] = absent[f]
			} else {
				fields[f] = scalarString(v)
			}
		}
		return labels, fields, nil
	}
}
