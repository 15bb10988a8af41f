package server

import (
	"fmt"

	"github.com/listwatch/listwatch/wire"
)

// maxDepth is the deepest nesting of objects and arrays accepted in a
// create or update body and in the result of a patch (the outermost
// object is level 1). Kubernetes objects stay far below it; holding every
// write to the same limit means that what can be created can be patched,
// and nothing deeper can be made either way.
const maxDepth = 1000

// checkDepth scans raw JSON and reports whether nesting exceeds maxDepth,
// in one linear pass that builds nothing. It does not validate the JSON;
// the decoder does that afterwards.
func checkDepth(data []byte) error { return checkDepthFrom(data, 0) }

// checkDocDepth is checkDepth for a decoded object, leaving out its
// managedFields: the server writes them, and they nest up to four levels
// deeper than the fields they record, so that an object at the deepest
// nesting a create accepts can still be patched.
func checkDocDepth(d *doc) error {
	for _, v := range d.rest {
		if err := checkDepthFrom(v, 1); err != nil {
			return err
		}
	}
	for k, v := range d.meta {
		if k == "managedFields" {
			continue
		}
		if err := checkDepthFrom(v, 2); err != nil {
			return err
		}
	}
	return nil
}

// checkDepthFrom is checkDepth for a value nested depth levels deep.
func checkDepthFrom(data []byte, depth int) error {
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte can be neither a quote nor a bracket
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return tooDeep()
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// tooDeep is the answer to a body or patch result nested deeper than
// maxDepth. Create, update and every patch type share the limit and this
// answer.
func tooDeep() *wire.Status {
	return wire.NewBadRequest(fmt.Sprintf("exceeded max depth of %d", maxDepth))
}
