package server

import (
	"encoding/json"
	"fmt"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// predicate builds the storage.Predicate of a LIST, WATCH or
// DELETECOLLECTION from its selectors, refusing fields r cannot select on
// with kube's 400 "field label not supported".
func predicate(r *resource, labelSel, fieldSel string) (storage.Predicate, error) {
	ls, err := object.ParseLabelSelector(labelSel)
	if err != nil {
		return storage.Predicate{}, wire.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	fs, err := object.ParseFieldSelector(fieldSel)
	if err != nil {
		return storage.Predicate{}, wire.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	for _, f := range fs.Fields() {
		if f == "metadata.name" || f == "metadata.namespace" {
			continue
		}
		if _, ok := r.fields[f]; !ok {
			return storage.Predicate{}, wire.NewBadRequest("field label not supported: " + f)
		}
	}
	p := storage.Predicate{Label: ls, Field: fs}
	if len(r.fields) > 0 && !fs.Empty() {
		p.Attrs = attrFunc(r.fields)
	}
	return p, nil
}

// attrFunc extracts labels, metadata.name/namespace and the selectable
// fields given (name to path in the object) from a stored value.
func attrFunc(selectable map[string][]string) storage.AttrFunc {
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
			fields[f] = scalarString(lookup(obj, path))
		}
		return labels, fields, nil
	}
}
