package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	tablevalidation "k8s.io/apimachinery/pkg/apis/meta/v1beta1/validation"
	sigsjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/wire"
)

// column is one Table column after NAME. A cell is taken from path (a
// string, number or bool there), counted from the keys of count's maps or
// arrays, or computed by cell.
type column struct {
	name     string
	typ      string // "string" (default), "integer", "date"
	priority int32
	path     []string
	count    [][]string
	cell     func(obj map[string]any) any
}

func (c column) value(obj map[string]any) any {
	switch {
	case c.cell != nil:
		return c.cell(obj)
	case c.count != nil:
		n := 0
		for _, p := range c.count {
			switch v := lookup(obj, p).(type) {
			case map[string]any:
				n += len(v)
			case []any:
				n += len(v)
			}
		}
		return n
	case c.typ == "date":
		s, _ := lookup(obj, c.path).(string)
		return translateTimestamp(s, time.Now())
	default:
		return scalarString(lookup(obj, c.path))
	}
}

// tableColumns are the Table's column definitions for r: NAME, r's
// columns, then AGE, as kube prints them.
func tableColumns(r *resource) []wire.TableColumnDefinition {
	if t := r.typed(); t != nil && t.printed {
		if cols, err := t.printedColumns(); err == nil {
			return cols
		}
	}
	if cols, ok := r.schema.tableColumns(); ok {
		return cols
	}
	cols := []wire.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name",
		Description: "Name must be unique within a namespace."}}
	for _, c := range r.columns {
		t := c.typ
		if t == "" || t == "date" {
			t = "string"
		}
		cols = append(cols, wire.TableColumnDefinition{Name: c.name, Type: t, Priority: c.priority})
	}
	cols = append(cols, wire.TableColumnDefinition{Name: "Age", Type: "string",
		Description: "CreationTimestamp is a timestamp representing the server time when this object was created."})
	// A built-in kind kube prints whose cells are made here (they are
	// kube's, made faster): the column definitions are kube's printer's,
	// descriptions and types as kube serves them (ConfigMap's Data is a
	// "string" column there), when its columns are these.
	if t := r.typed(); t != nil {
		if kube, err := t.printedColumns(); err == nil && sameColumnNames(kube, cols) {
			return kube
		}
	}
	return cols
}

// sameColumnNames reports whether a and b name the same columns in the
// same order.
func sameColumnNames(a, b []wire.TableColumnDefinition) bool {
	return slices.EqualFunc(a, b, func(x, y wire.TableColumnDefinition) bool { return x.Name == y.Name })
}

// includeObject says what a row's object holds.
type includeObject string

const (
	includeNone     includeObject = "None"
	includeMetadata includeObject = "Metadata"
	includeFull     includeObject = "Object"
)

// tableOptions is how a Table is made.
type tableOptions struct {
	include includeObject
	// apiVersion is the Table's, meta.k8s.io/v1 or v1beta1, and its rows'
	// partial metadata's.
	apiVersion string
	// noHeaders: no column definitions ("columnDefinitions": null), as
	// in kube's Tables of a watch's events after its first.
	noHeaders bool
}

// tableOptions reads the options of the Table out asks for from c's
// query as kube does (optionsForTransform), with its validation and its
// 400 for an includeObject it does not know; none is Metadata.
func (c *call) tableOptions(out output) (tableOptions, error) {
	ko := metav1.TableOptions{IncludeObject: metav1.IncludeObjectPolicy(c.r.URL.Query().Get("includeObject"))}
	if errs := tablevalidation.ValidateTableOptions(&ko); len(errs) > 0 {
		// It checks one field: one error, which kube's message quotes.
		return tableOptions{}, wire.NewBadRequest("Unable to convert to Table as requested: " + errs[0].Error())
	}
	opts := tableOptions{include: includeObject(ko.IncludeObject), apiVersion: out.metaAPIVersion()}
	if opts.include == "" {
		opts.include = includeMetadata
	}
	return opts, nil
}

// tableRow renders one stored value as a row of a Table made as opts
// says, with cells when a list printer made them (nil: the value's own);
// now is passed in so every row of a table ages against the same instant.
func tableRow(r *resource, value []byte, cells []any, opts tableOptions, now time.Time) (wire.TableRow, error) {
	var obj map[string]any
	if err := json.Unmarshal(value, &obj); err != nil {
		return wire.TableRow{}, err
	}
	include := opts.include
	if include == includeNone && lookup(obj, []string{"metadata", "annotations", wire.AnnotationInitialEventsEnd}) == "true" {
		// kube keeps the metadata of the row that ends a watch's initial
		// events (a bookmark's), so that the client can tell it.
		include = includeMetadata
	}
	if cells == nil {
		var err error
		if cells, err = ownCells(r, value, obj, now); err != nil {
			return wire.TableRow{}, err
		}
	}
	row := wire.TableRow{Cells: cells}
	switch include {
	case includeFull:
		row.Object = value
	case includeMetadata:
		po, err := partialObject(value, opts.apiVersion)
		if err != nil {
			return wire.TableRow{}, err
		}
		row.Object = po
	}
	return row, nil
}

// ownCells are the cells of value (decoded: obj) printed on its own: by
// its CRD's columns, kube's printer of its kind, or r's columns.
func ownCells(r *resource, value []byte, obj map[string]any, now time.Time) ([]any, error) {
	if cs, ok := r.schema.tableCells(value); ok {
		return cs, nil
	}
	if t := r.typed(); t != nil && t.printed {
		return t.printedCells(value)
	}
	name, _ := lookup(obj, []string{"metadata", "name"}).(string)
	created, _ := lookup(obj, []string{"metadata", "creationTimestamp"}).(string)
	cells := []any{name}
	for _, c := range r.columns {
		cells = append(cells, c.value(obj))
	}
	return append(cells, translateTimestamp(created, now)), nil
}

// partialObject turns a stored value into a PartialObjectMetadata of
// apiVersion (meta.k8s.io/v1 or v1beta1): its metadata only, as kube's
// typed encoder writes it. A built-in object's stored metadata is in
// ObjectMeta's order already (it starts with "kind": doc.encode); a
// custom resource's (or a built-in object an earlier serve stored) is
// not, and is made kube's typed PartialObjectMetadata as kube's handlers
// make one of an unstructured object (meta.AsPartialObjectMetadata):
// ObjectMeta's fields, its managedFields' and ownerReferences' members
// in their Go order.
func partialObject(value []byte, apiVersion string) ([]byte, error) {
	if !bytes.HasPrefix(value, []byte(`{"kind":`)) {
		// Only metadata is decoded (a custom resource's spec may be
		// large): what meta.AsPartialObjectMetadata reads of it through
		// its accessors, a stored object's metadata being valid.
		var m struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(value, &m); err == nil {
			return json.Marshal(&metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: apiVersion},
				ObjectMeta: m.Metadata,
			})
		}
	}
	var m struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(value, &m); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(m.Metadata)+80)
	out = append(out, `{"kind":"PartialObjectMetadata","apiVersion":"`...)
	out = append(out, apiVersion...)
	out = append(out, `","metadata":`...)
	out = append(out, m.Metadata...)
	return append(out, '}'), nil
}

// translateTimestamp is kubectl's short age: 5s, 3m20s, 4h, 12d.
func translateTimestamp(ts string, now time.Time) string {
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return "<unknown>"
	}
	return shortDuration(now.Sub(t))
}

func shortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch s := int64(d.Round(time.Second) / time.Second); {
	case s < 120:
		return fmt.Sprintf("%ds", s)
	case s < 600:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", s/60)
		}
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	case s < 3*3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 8*3600:
		if m := (s / 60) % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", s/3600, m)
		}
		return fmt.Sprintf("%dh", s/3600)
	case s < 48*3600:
		return fmt.Sprintf("%dh", s/3600)
	case s < 8*86400:
		if h := (s / 3600) % 24; h != 0 {
			return fmt.Sprintf("%dd%dh", s/86400, h)
		}
		return fmt.Sprintf("%dd", s/86400)
	case s < 2*365*86400:
		return fmt.Sprintf("%dd", s/86400)
	default:
		return fmt.Sprintf("%dy", s/(365*86400))
	}
}

func lookup(obj map[string]any, path []string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// scalarString renders a JSON scalar as a field selector or a cell sees it.
func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func podReady(obj map[string]any) any {
	total, _ := lookup(obj, []string{"spec", "containers"}).([]any)
	ready := 0
	statuses, _ := lookup(obj, []string{"status", "containerStatuses"}).([]any)
	for _, s := range statuses {
		if m, ok := s.(map[string]any); ok && m["ready"] == true {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, len(total))
}

func podStatus(obj map[string]any) any {
	if _, ok := lookup(obj, []string{"metadata", "deletionTimestamp"}).(string); ok {
		return "Terminating"
	}
	if r, ok := lookup(obj, []string{"status", "reason"}).(string); ok && r != "" {
		return r
	}
	if p, ok := lookup(obj, []string{"status", "phase"}).(string); ok && p != "" {
		return p
	}
	return "Pending"
}

func podRestarts(obj map[string]any) any {
	n := 0.0
	statuses, _ := lookup(obj, []string{"status", "containerStatuses"}).([]any)
	for _, s := range statuses {
		if m, ok := s.(map[string]any); ok {
			c, _ := m["restartCount"].(float64)
			n += c
		}
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

func eventObject(obj map[string]any) any {
	kind, _ := lookup(obj, []string{"involvedObject", "kind"}).(string)
	name, _ := lookup(obj, []string{"involvedObject", "name"}).(string)
	return lowerFirst(kind) + "/" + name
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	b := []byte(s)
	if b[0] >= 'A' && b[0] <= 'Z' {
		b[0] += 'a' - 'A'
	}
	return string(b)
}
