package wire

import "encoding/json"

// Table is the meta.k8s.io/v1 Table that `kubectl get` asks for with
// Accept: application/json;as=Table;v=v1;g=meta.k8s.io.
type Table struct {
	TypeMeta          `json:",inline"`
	Metadata          ListMeta                `json:"metadata"`
	ColumnDefinitions []TableColumnDefinition `json:"columnDefinitions"`
	Rows              []TableRow              `json:"rows"`
}

// TableColumnDefinition describes one column.
type TableColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	Description string `json:"description"`
	Priority    int32  `json:"priority"`
}

// TableRow is one object's cells; Object holds the object or its
// PartialObjectMetadata, as includeObject asks. Without one
// (includeObject=None) it is JSON null, as Kubernetes encodes the row's
// empty RawExtension: the member is always there.
type TableRow struct {
	Cells  []any           `json:"cells"`
	Object json.RawMessage `json:"object"`
}
