package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

var (
	// errJSONList is wrapped by readJSONList's errors about the list's
	// shape.
	errJSONList = errors.New("malformed JSON list")
	// errRepeatedItems: a list with more than one items key.
	errRepeatedItems = fmt.Errorf("%w: more than one items key", errJSONList)
	// errNullItem: a list item that is null, which would reach the
	// caller as a nil object.
	errNullItem = fmt.Errorf("%w: an item is null", errJSONList)
)

// readJSONList reads a JSON list from r as it arrives and passes each item,
// decoded as decodeObject decodes one, to each in order: the body is never
// held whole, only the item being decoded. kube-apiserver answers a LIST
// with resourceVersion=0 in one page whatever the limit, and custom
// resources only in JSON: 100,000 of them is a body of over 100 MiB.
//
// It decodes what decodeList decodes, with the same exact-key rules (a key
// that only folds to "items" or "metadata" is no such field), but for a
// list with more than one "items" key, whose last would win there, which it
// refuses, and for a null item, which it refuses rather than hand over a
// nil object. It returns the list's metadata; an error from each stops the
// read and is returned as is. Unlike decodeList, it holds keys to their
// exact spelling for Unstructured too, as client-go's UnstructuredList
// does.
func readJSONList[T object.Object](r io.Reader, each func(T) error) (wire.ListMeta, error) {
	var lm wire.ListMeta
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return lm, err
	}
	switch tok {
	case nil: // null decodes to an empty list, as json.Unmarshal has it
		return lm, nil
	case json.Delim('{'):
	default:
		return lm, fmt.Errorf("%w: a list is a JSON object, not %v", errJSONList, tok)
	}
	seenItems := false
	var listType wire.TypeMeta // as far as read before the items
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return wire.ListMeta{}, err
		}
		switch key, _ := tok.(string); key {
		case "items":
			if seenItems {
				return wire.ListMeta{}, errRepeatedItems
			}
			seenItems = true
			if err := readJSONItems(dec, listType, each); err != nil {
				return wire.ListMeta{}, err
			}
		case "metadata":
			// Into the same ListMeta each time, as json.Unmarshal does
			// with a repeated key.
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return wire.ListMeta{}, err
			}
			raw, _ = stripFolded(raw, listMetaKeys)
			if err := json.Unmarshal(raw, &lm); err != nil {
				return wire.ListMeta{}, err
			}
		case "apiVersion", "kind":
			var v string // a value of another type fails, as in decodeList
			if err := dec.Decode(&v); err != nil {
				return wire.ListMeta{}, err
			}
			if key == "kind" {
				listType.Kind = v
			} else {
				listType.APIVersion = v
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return wire.ListMeta{}, err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return wire.ListMeta{}, err
	}
	return lm, nil
}

// readJSONItems reads the items array, or null, that dec is at, of a list
// of type list (inheritListType).
func readJSONItems[T object.Object](dec *json.Decoder, list wire.TypeMeta, each func(T) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case nil:
		return nil
	case json.Delim('['):
	default:
		return fmt.Errorf("%w: items is a JSON array, not %v", errJSONList, tok)
	}
	d := newItemDecoder(func(raw []byte) (T, error) {
		var item T
		if err := decodeValid[T](raw, &item); err != nil {
			return item, err
		}
		inheritListType(item, list)
		return item, nil
	}, each)
	defer d.stop() // also when each panics
	err = readJSONArray(dec, d.add)
	return d.finish(err)
}

// readJSONArray passes each value of the array dec is in, up to its
// closing bracket, to add.
func readJSONArray(dec *json.Decoder, add func([]byte) error) error {
	var raw json.RawMessage
	for dec.More() {
		raw = raw[:0]
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if isNull(raw) {
			return errNullItem
		}
		if err := add(raw); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing bracket
	return err
}

// inheritListType gives an Unstructured list item without apiVersion and
// kind those of its list (kind without "List"), as client-go's
// UnstructuredList decoding does: a typed List's items carry none on the
// wire (kube-apiserver's built-in kinds), and a dynamic client's objects
// are known by them. Typed items are left as they are, as client-go's.
func inheritListType[T object.Object](item T, list wire.TypeMeta) {
	u, ok := any(item).(*object.Unstructured)
	if !ok || u == nil || u.GetKind() != "" || u.GetAPIVersion() != "" || list.Kind == "" && list.APIVersion == "" {
		return
	}
	u.SetKind(strings.TrimSuffix(list.Kind, "List"))
	u.SetAPIVersion(list.APIVersion)
}
