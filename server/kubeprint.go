package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
