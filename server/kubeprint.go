package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"

	"github.com/listwatch/listwatch/wire"
)

// Tables of the built-in kinds whose typing says printed: kube-apiserver's
// own printers (the ones `kubectl get` shows against kube) render the
// stored object, decoded and converted to kube's internal type.

var kubePrinter = printers.NewTableGenerator().With(printersinternal.AddHandlers)

// printedColumns are the column definitions kube prints for t's kind,
// wide ones included, as kube-apiserver serves them.
func (t *typedKind) printedColumns() ([]wire.TableColumnDefinition, error) {
	obj, err := t.scheme.New(t.internal)
	if err != nil {
		return nil, err
	}
	if !t.hasPrinter() {
		return defaultColumns, nil
	}
	tbl, err := t.generateTable(obj)
	if err != nil {
		return nil, err
	}
	cols := make([]wire.TableColumnDefinition, 0, len(tbl.ColumnDefinitions))
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, wire.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format,
			Description: c.Description, Priority: c.Priority})
	}
	return cols, nil
}

// printedCells are the cells kube prints for the stored value.
func (t *typedKind) printedCells(value []byte) ([]any, error) {
	d, err := decodeDoc(value)
	if err != nil {
		return nil, err
	}
	internal, err := t.decodeStored(d)
	if err != nil {
		return nil, err
	}
	if !t.hasPrinter() {
		m, err := meta.Accessor(internal)
		if err != nil {
			return nil, err
		}
		return []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}, nil
	}
	tbl, err := t.generateTable(internal)
	if err != nil {
		return nil, err
	}
	if len(tbl.Rows) != 1 {
		return nil, errNoRow
	}
	return tbl.Rows[0].Cells, nil
}

// listPrinted are the kinds whose list printer among kube's printers does
// more than print each item in turn: FlowSchemas are sorted by matching
// precedence, then name (printFlowSchemaList), and the effective default
// StorageClass, the newest with the default-class annotation, is printed
// "NAME (default)" (printStorageClassList). A list's Table of these is
// what that printer makes of the page, as kube's (one page at a time); a
// GET or a watch event prints its one object. TestListPrintersPrintEachItem
// checks that the other kinds' list printers print each item in turn.
var listPrinted = map[schema.GroupKind]bool{
	{Group: groupFlowcontrol, Kind: "FlowSchema"}: true,
	{Group: groupStorage, Kind: "StorageClass"}:   true,
}

// printedRow is one row a list printer made: its cells, and the index of
// the object it prints in the page printed.
type printedRow struct {
	cells []any
	index int
}

// printedPage is what kube's list printer of t makes of values, a page
// of t's stored objects, for a kind listPrinted names: the rows in the
// printer's order. ok is false for the other kinds, whose rows are those
// of their objects, in the page's order.
func (t *typedKind) printedPage(values [][]byte) (rows []printedRow, ok bool, err error) {
	if !t.printed || !listPrinted[t.internal.GroupKind()] || !t.hasPrinter() {
		return nil, false, nil
	}
	rows, err = t.printList(values)
	return rows, err == nil, err
}

// printList is what kube's printer of t's list kind makes of values.
func (t *typedKind) printList(values [][]byte) ([]printedRow, error) {
	list, err := t.scheme.New(t.internal.GroupVersion().WithKind(t.internal.Kind + "List"))
	if err != nil {
		return nil, err
	}
	items := make([]runtime.Object, len(values))
	for i, v := range values {
		d, err := decodeDoc(v)
		if err != nil {
			return nil, err
		}
		if items[i], err = t.decodeStored(d); err != nil {
			return nil, err
		}
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	// The printer's rows name the list's items (pointers into it).
	listed, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	index := make(map[runtime.Object]int, len(listed))
	for i, o := range listed {
		index[o] = i
	}
	tbl, err := t.generateTable(list)
	if err != nil {
		return nil, err
	}
	rows := make([]printedRow, 0, len(tbl.Rows))
	for _, r := range tbl.Rows {
		i, found := index[r.Object.Object]
		if !found {
			return nil, errRowObject
		}
		rows = append(rows, printedRow{cells: r.Cells, index: i})
	}
	return rows, nil
}

// errRowObject: a list printer's row names no item of the list.
var errRowObject = errors.New("server: a list printer's row names no item of the list")

// generateTable is kube's wide table of obj: the kind's own convertor's
// when it has one, else its printer's.
func (t *typedKind) generateTable(obj runtime.Object) (*metav1.Table, error) {
	if t.table != nil {
		return t.table.ConvertToTable(context.Background(), obj, nil)
	}
	return kubePrinter.GenerateTable(obj, printers.GenerateOptions{Wide: true})
}

// errNoRow: kube's printer made no row of one object.
var errNoRow = errors.New("server: the printer made no row")

// printerKinds caches, per internal kind, whether kube registers a printer
// for it.
var printerKinds sync.Map // schema.GroupVersionKind → bool

// hasPrinter reports whether kube's printers know t's kind; the others
// (Role, ClusterRole, LimitRange…) get kube's default table: Name and
// Created At.
func (t *typedKind) hasPrinter() bool {
	if t.defaultTable {
		return false
	}
	if t.table != nil {
		return true
	}
	if v, ok := printerKinds.Load(t.internal); ok {
		return v.(bool)
	}
	ok := false
	if obj, err := t.scheme.New(t.internal); err == nil {
		_, err = kubePrinter.GenerateTable(obj, printers.GenerateOptions{Wide: true})
		ok = err == nil
	}
	printerKinds.Store(t.internal, ok)
	return ok
}

// defaultColumns are those of kube's default table convertor.
var defaultColumns = func() []wire.TableColumnDefinition {
	doc := metav1.ObjectMeta{}.SwaggerDoc()
	return []wire.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: doc["name"]},
		{Name: "Created At", Type: "date", Description: doc["creationTimestamp"]},
	}
}()
