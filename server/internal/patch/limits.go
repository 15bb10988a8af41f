package patch

import (
	"errors"
	"fmt"
)

// Limits against hostile input. They are generous for any real Kubernetes
// object and small enough that checking them is cheap.
const (
	// MaxDepth is the deepest nesting of objects and arrays accepted in a
	// document, a patch, or a result. Kubernetes objects stay far below it
	// (a CRD's openAPIV3Schema is the deepest common case), and it keeps every
	// recursive walk in this package well inside the goroutine stack.
	// The server holds create and update bodies to it too (CheckDepth),
	// so that an object that can be created can also be patched.
	MaxDepth = 1000

	// MaxOperations is the most operations a JSON patch may hold; it is
	// kube-apiserver's limit too.
	MaxOperations = 10000

	// MaxCopyBytes bounds the approximate size of everything the "copy"
	// operations of one JSON patch duplicate, so that a small patch cannot
	// double a document ten thousand times.
	MaxCopyBytes = 16 << 20
)

// ErrTooDeep is matched, besides ErrInvalidPatch or ErrInvalidDocument, by
// every error about nesting deeper than MaxDepth: a document, a patch, a
// copied value or a result. The server answers it the same way whatever
// the request, so that what can be created can be patched and nothing
// deeper can be made either way.
var ErrTooDeep = errors.New("patch: nesting deeper than MaxDepth")

// depthError is the text of a nesting error; it matches ErrTooDeep.
type depthError string

func (e depthError) Error() string        { return string(e) }
func (e depthError) Is(target error) bool { return target == ErrTooDeep }

func tooDeep(what string) error {
	return depthError(fmt.Sprintf("%s deeper than %d levels", what, MaxDepth))
}

// CheckDepth scans raw JSON and fails, with an error matching ErrTooDeep,
// once nesting exceeds MaxDepth (the outermost object or array is level 1).
// It runs before decoding so that a 10,000-level document is refused in one
// linear pass, without building anything. It does not validate the JSON; the
// decoder does that afterwards.
func CheckDepth(data []byte) error { return checkDepth(data) }

func checkDepth(data []byte) error {
	depth := 0
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
			if depth > MaxDepth {
				return tooDeep("nesting")
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
