package storage

import (
	"encoding/json"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// AttrFunc extracts the labels and the selectable fields of a stored value.
type AttrFunc func(value []byte) (labels, fields map[string]string, err error)

// Predicate filters objects by label and field selectors.
// The zero value matches everything.
type Predicate struct {
	Label object.LabelSelector
	Field object.FieldSelector
	// Attrs extracts what the selectors test; nil means DefaultAttrs.
	Attrs AttrFunc
}

// Empty reports whether p matches everything without looking at values.
func (p Predicate) Empty() bool { return p.Label.Empty() && p.Field.Empty() }

// Matches reports whether value satisfies the selectors.
func (p Predicate) Matches(value []byte) (bool, error) {
	if p.Empty() {
		return true, nil
	}
	attrs := p.Attrs
	if attrs == nil {
		attrs = DefaultAttrs
	}
	labels, fields, err := attrs(value)
	if err != nil {
		return false, err
	}
	return p.MatchesAttrs(labels, fields), nil
}

// MatchesAttrs is Matches on attributes extracted already.
func (p Predicate) MatchesAttrs(labels, fields map[string]string) bool {
	return p.Label.Matches(labels) && p.Field.MatchesSet(fields)
}

// MatchesLookup is Matches on attributes held in another form: label
// returns a label's value and whether it is set, field a field's value
// ("" when absent).
func (p Predicate) MatchesLookup(label func(string) (string, bool), field func(string) string) bool {
	return p.Label.MatchesFunc(label) && p.Field.Matches(field)
}

// DefaultAttrs gives an object's labels and its metadata.name and
// metadata.namespace fields, the fields every resource can select on.
//
// A value whose first top-level member named exactly "metadata" is an
// object, as every value the server stores, has only that object decoded
// (into its name, namespace and labels): the watch cache runs this on
// every object it loads and every event. Anything else is decoded whole,
// as encoding/json reads it. The scan does not validate what it steps
// over, nor decode the fields other than metadata's name, namespace and
// labels: a value that is not valid JSON, or holds another field of the
// wrong type (a numeric kind, a string generation), may be read where a
// whole decode would fail. The server stores only values it encoded.
func DefaultAttrs(value []byte) (labels, fields map[string]string, err error) {
	var m struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	}
	if raw, ok := metadataValue(value); ok && json.Unmarshal(raw, &m) == nil {
		return m.Labels, map[string]string{"metadata.name": m.Name, "metadata.namespace": m.Namespace}, nil
	}
	var obj wire.PartialObject
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, nil, err
	}
	return obj.Metadata.Labels, map[string]string{
		"metadata.name":      obj.Metadata.Name,
		"metadata.namespace": obj.Metadata.Namespace,
	}, nil
}
