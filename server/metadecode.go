package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/wire"
)

// Metadata is decoded as kube-apiserver decodes an ObjectMeta: only the
// fields ObjectMeta has, matched case-sensitively. encoding/json would
// match "resourceversion" or "Name" to those fields, so a client decoding
// with it (as typed Go clients do) would read a stored case variant in
// place of the real field. Every key that is not one of these, spelled
// exactly, is dropped; so is every earlier copy of a duplicated key (the
// last one counts, as in kube). Each is reported as kube's strict decoder
// reports it: `unknown field "metadata.x"`, `duplicate field "metadata.x"`.

// objectMetaFields are the JSON names of kube's ObjectMeta fields.
var objectMetaFields = map[string]bool{
	"name": true, "generateName": true, "namespace": true, "selfLink": true,
	"uid": true, "resourceVersion": true, "generation": true,
	"creationTimestamp": true, "deletionTimestamp": true,
	"deletionGracePeriodSeconds": true, "labels": true, "annotations": true,
	"ownerReferences": true, "finalizers": true, "managedFields": true,
}

// ownerReferenceFields are the JSON names of kube's OwnerReference fields.
var ownerReferenceFields = map[string]bool{
	"apiVersion": true, "kind": true, "name": true, "uid": true,
	"controller": true, "blockOwnerDeletion": true,
}

// strictErrors collects kube's strict decoding errors in the order met.
// Each is reported once: add drops a repeat while the list is short, and
// message and warnStrict drop the rest (a body can name hundreds of
// thousands of fields, and searching the list on every add would take
// time quadratic in them).
type strictErrors []string

func (s *strictErrors) add(kind, path string) {
	e := kind + " " + strconv.Quote(path)
	if len(*s) < 32 && slices.Contains(*s, e) {
		return
	}
	*s = append(*s, e)
}

// unique is s without repeats, in the order first met.
func (s strictErrors) unique() strictErrors {
	if len(s) < 2 {
		return s
	}
	seen := make(map[string]bool, len(s))
	out := make(strictErrors, 0, len(s))
	for _, e := range s {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// member is one key and its raw value in a JSON object.
type member struct {
	key string
	val json.RawMessage
}

// cleanMembers drops the members whose key known refuses (nil: every key
// is known, as in a map) and all but the last of duplicated keys,
// reporting each under path. It keeps first-seen order.
func cleanMembers(ms []member, path string, known map[string]bool, errs *strictErrors) (keys []string, vals map[string]json.RawMessage, changed bool) {
	vals = make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		p := path + "." + m.key
		if known != nil && !known[m.key] {
			errs.add("unknown field", p)
			changed = true
			continue
		}
		if _, dup := vals[m.key]; dup {
			errs.add("duplicate field", p)
			changed = true
		} else {
			keys = append(keys, m.key)
		}
		vals[m.key] = m.val
	}
	return keys, vals, changed
}

// encodeMembers writes an object of keys in order.
func encodeMembers(keys []string, vals map[string]json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, k)
		b.WriteByte(':')
		b.Write(vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// decodeMeta decodes the metadata object raw into its fields, kube's way
// (see above); errs gets what was dropped. ok is false when raw is not a
// JSON object.
//
// raw is part of a document decodeDoc has validated, so its objects are
// split without validating them again.
func decodeMeta(raw []byte, errs *strictErrors) (map[string]json.RawMessage, bool) {
	ms, ok := splitObject(raw)
	if !ok {
		return nil, false
	}
	_, meta, _ := cleanMembers(ms, "metadata", objectMetaFields, errs)
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := meta[k]; ok {
			if ms, ok := splitObject(v); ok {
				if keys, vals, changed := cleanMembers(ms, "metadata."+k, nil, errs); changed {
					meta[k] = encodeMembers(keys, vals)
				}
			}
		}
	}
	if v, ok := meta["ownerReferences"]; ok {
		meta["ownerReferences"] = cleanOwnerReferences(v, errs)
	}
	return meta, true
}

// cleanOwnerReferences applies the same rule to each owner reference.
func cleanOwnerReferences(raw json.RawMessage, errs *strictErrors) json.RawMessage {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return raw // not an array: validation's business, as before
	}
	changed := false
	for i, it := range items {
		ms, ok := splitObject(it)
		if !ok {
			continue
		}
		keys, vals, c := cleanMembers(ms, "metadata.ownerReferences["+strconv.Itoa(i)+"]", ownerReferenceFields, errs)
		if c {
			items[i] = encodeMembers(keys, vals)
			changed = true
		}
	}
	if !changed {
		return raw
	}
	out, _ := json.Marshal(items)
	return out
}

// fieldValidation directives (the request's fieldValidation parameter).
const (
	fieldValidationIgnore = "Ignore"
	fieldValidationWarn   = "Warn"
	fieldValidationStrict = "Strict"
)

// fieldValidation is the request's directive; Warn when absent, as in kube.
func (c *call) fieldValidation() string {
	if v := c.r.URL.Query().Get("fieldValidation"); v != "" {
		return v
	}
	return fieldValidationWarn
}

// checkDecoded applies the request's fieldValidation to the metadata
// fields decoding a create or update body dropped: a Warning header each
// (Warn), nothing (Ignore), or kube's 400 for a strict decoding error.
func (c *call) checkDecoded(d *doc) error {
	if len(d.strict) == 0 {
		return nil
	}
	switch c.fieldValidation() {
	case fieldValidationStrict:
		// A custom resource is decoded as the kind it says (one of
		// another kind is refused later, by its validation).
		kind := c.res.kind
		if c.res.crd != "" && d.kind != "" {
			kind = d.kind
		}
		return wire.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %s",
			kind, c.bodyVersion(d), kind, d.strict.message()))
	case fieldValidationIgnore:
		return nil
	}
	c.warnStrict(d.strict)
	return nil
}

// checkPatched is checkDecoded for a patch's result, patched: kube refuses
// it as an Invalid "patch" field rather than a bad request.
func (c *call) checkPatched(d *doc, patched []byte) error {
	if len(d.strict) == 0 {
		return nil
	}
	switch c.fieldValidation() {
	case fieldValidationStrict:
		st := invalid("", "", "", "", fieldInvalid("patch", string(patched), d.strict.message()))
		st.Details.Kind = ""
		return st
	case fieldValidationIgnore:
		return nil
	}
	c.warnStrict(d.strict)
	return nil
}

func (s strictErrors) message() string {
	return "strict decoding error: " + strings.Join(s.unique(), ", ")
}

// warnStrict adds a Warning header per error (see responseWarnings).
func (c *call) warnStrict(errs strictErrors) {
	if c.w == nil {
		return
	}
	if c.warn == nil {
		c.warn = &responseWarnings{}
	}
	for _, e := range errs {
		for _, w := range yamlWarnings(e) {
			c.warn.add(c.w.Header(), w)
		}
	}
}

// yamlWarnings is the warnings kube makes of one strict decoding error:
// a YAML decoder's list of errors ("yaml: unmarshal errors:" and a line
// each) is one warning per line, without the heading; any other error is
// one warning.
func yamlWarnings(e string) []string {
	rest, ok := strings.CutPrefix(e, "yaml: unmarshal errors:\n")
	if !ok {
		if rest, ok = strings.CutPrefix(e, "error converting YAML to JSON: yaml: unmarshal errors:\n"); !ok {
			return []string{e}
		}
	}
	lines := strings.Split(rest, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines
}
