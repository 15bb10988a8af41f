package patch

// Schema tells strategic merge patch how to treat the fields of one kind of
// JSON object: which lists merge element by element (and on which key), which
// primitive lists are unioned, and what the nested objects look like.
//
// It holds only what changes merging. A field the schema does not know gets
// the defaults: objects merge recursively, lists are replaced. Directives in
// the patch ($patch, $retainKeys, $deleteFromPrimitiveList, $setElementOrder)
// work wherever they appear and need nothing from the schema.
type Schema interface {
	// Field describes the named field of an object this schema describes.
	// ok is false for a field the schema does not know.
	Field(name string) (f Field, ok bool)
}

// Field is the patch metadata of one field, the facts Kubernetes keeps in
// patchStrategy and patchMergeKey struct tags.
type Field struct {
	// Merge is patchStrategy "merge" on a list: elements are merged rather
	// than the whole list replaced. With MergeKey set, the list holds objects
	// matched by that key; without, it holds primitives and is unioned.
	Merge bool
	// MergeKey is patchMergeKey: the member that identifies an element of a
	// merged list of objects.
	MergeKey string
	// RetainKeys is patchStrategy "retainKeys". Applying a patch honours a
	// $retainKeys directive wherever it appears, so this is descriptive; it
	// is kept so that the tables say everything the Kubernetes tags say.
	RetainKeys bool
	// Replace is patchStrategy "replace" on an object: the patch value
	// replaces it instead of merging into it.
	Replace bool
	// Schema describes the field's value: the object itself, or for a list
	// its elements. Nil means nothing is known below this field.
	Schema Schema
}

// Fields is a Schema given as a table from field name to Field. A nil Fields
// knows no field.
type Fields map[string]Field

// Field implements Schema.
func (fs Fields) Field(name string) (Field, bool) {
	f, ok := fs[name]
	return f, ok
}

var _ Schema = Fields(nil)

// lookup is Schema.Field with a nil Schema allowed.
func lookup(s Schema, name string) Field {
	if s == nil {
		return Field{}
	}
	f, _ := s.Field(name)
	return f
}
