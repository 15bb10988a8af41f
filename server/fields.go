package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

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
//
// The watch cache calls it for every object it loads and every change, so
// it does not decode the object: it validates it (json.Valid) and walks
// only the members on the fields' paths (attrNode.scan), giving what
// decodeAttrs, the decoding into map[string]any it replaced, gives
// (FuzzAttrFuncAsDecoded), except that a number too large for a float64
// elsewhere in the object no longer makes it unselectable. For a
// production-shaped pod that is a fraction of the cost (BenchmarkAttrFunc).
func attrFunc(selectable map[string][]string, absent map[string]string) storage.AttrFunc {
	root := attrTree(selectable)
	return func(value []byte) (map[string]string, map[string]string, error) {
		if !json.Valid(value) {
			return decodeAttrs(value, selectable, absent) // encoding/json's error
		}
		labels := map[string]string{}
		fields := make(map[string]string, len(selectable)+2)
		if !root.scan(value, labels, fields) {
			// Not an object, or a value on the paths encoding/json cannot
			// decode: its answer.
			return decodeAttrs(value, selectable, absent)
		}
		for _, f := range [...]string{"metadata.name", "metadata.namespace"} {
			if _, ok := fields[f]; !ok {
				fields[f] = ""
			}
		}
		for f := range selectable {
			if _, ok := fields[f]; !ok {
				fields[f] = absent[f]
			}
		}
		return labels, fields, nil
	}
}

// attrNode is a member on the paths attrFunc reads: the fields whose
// path ends there, the members below it by name, and whether it is
// metadata.labels.
type attrNode struct {
	fields   []string
	children map[string]*attrNode
	kids     []*attrNode // children, each at its index
	index    int         // in its parent's kids
	labels   bool
}

// attrTree makes the tree of the paths of metadata.labels,
// metadata.name, metadata.namespace and the selectable fields (which
// take the place of the last two if they name them, as in decodeAttrs).
func attrTree(selectable map[string][]string) *attrNode {
	root := &attrNode{}
	add := func(path []string) *attrNode {
		n := root
		for _, p := range path {
			c := n.children[p]
			if c == nil {
				c = &attrNode{index: len(n.kids)}
				if n.children == nil {
					n.children = map[string]*attrNode{}
				}
				n.children[p] = c
				n.kids = append(n.kids, c)
			}
			n = c
		}
		return n
	}
	add([]string{"metadata", "labels"}).labels = true
	for _, f := range [...]string{"metadata.name", "metadata.namespace"} {
		if _, ok := selectable[f]; !ok {
			n := add([]string{"metadata", f[len("metadata."):]})
			n.fields = append(n.fields, f)
		}
	}
	for f, path := range selectable {
		if len(path) > 0 {
			n := add(path)
			n.fields = append(n.fields, f)
		}
	}
	return root
}

// scan reads the members of b (valid JSON) on n's paths into labels and
// fields, and reports whether b is an object whose values there decode.
// A member named twice counts as the last one, as encoding/json decodes
// it. A field whose value is null, or whose path passes through something
// other than an object, is left out of fields.
func (n *attrNode) scan(b []byte, labels, fields map[string]string) bool {
	// Each child's value, at its index: the last of its name.
	var buf [8][]byte
	vals := buf[:]
	if len(n.kids) > len(buf) {
		vals = make([][]byte, len(n.kids))
	}
	if !eachMember(b, func(key, val []byte) bool {
		if c := n.children[string(key)]; c != nil {
			vals[c.index] = val
		}
		return true
	}) {
		return false
	}
	for i, c := range n.kids {
		if vals[i] != nil && !c.read(vals[i], labels, fields) {
			return false
		}
	}
	return true
}

// read records val, the value at n's path, and reports whether what it
// read decodes.
func (n *attrNode) read(val []byte, labels, fields map[string]string) bool {
	if n.labels && val[0] == '{' {
		ok := eachMember(val, func(k, v []byte) bool {
			x, err := scalarValue(v)
			s, _ := x.(string)
			labels[string(k)] = s
			return err == nil
		})
		if !ok {
			return false
		}
	}
	if len(n.fields) > 0 {
		v, err := scalarValue(val)
		if err != nil {
			return false
		}
		if v != nil {
			s := scalarString(v)
			for _, f := range n.fields {
				fields[f] = s
			}
		}
	}
	if len(n.children) > 0 && val[0] == '{' {
		return n.scan(val, labels, fields)
	}
	return true
}

// scalarValue decodes a JSON value as encoding/json decodes it into an
// any, without decoding a string that has no escapes.
func scalarValue(v []byte) (any, error) {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v[1 : len(v)-1]), nil
	}
	var x any
	err := json.Unmarshal(v, &x)
	return x, err
}

// decodeAttrs is attrFunc by decoding value whole: for what json.Valid
// refuses or is not an object, whose error (or, for null, empty
// attributes) it gives as encoding/json does.
func decodeAttrs(value []byte, selectable map[string][]string, absent map[string]string) (map[string]string, map[string]string, error) {
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
