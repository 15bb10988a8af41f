package patch

import "fmt"

// Limits against hostile input. They are generous for any real Kubernetes
// object and small enough that checking them is cheap.
const (
	// MaxDepth is the deepest nesting of objects and arrays accepted in a
	// document, a patch, or a result. Kubernetes objects stay far below it
	// (a CRD's openAPIV3Schema is the deepest common case), and it keeps every
	// recursive walk in this package well inside the goroutine stack.
	MaxDepth = 1000

	// MaxOperations is the most operations a JSON patch may hold; it is
	// kube-apiserver's limit too.
	MaxOperations = 10000

	// MaxCopyBytes bounds the approximate size of everything the "copy"
	// operations of one JSON patch duplicate, so that a small patch cannot
	// double a document ten thousand times.
	MaxCopyBytes = 16 << 20
)

// checkDepth scans raw JSON and fails once nesting exceeds MaxDepth. It runs
// before decoding so that a 10,000-level document is refused in one linear
// pass, without building anything. It does not validate the JSON; the decoder
// does that afterwards.
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
				return fmt.Errorf("nesting deeper than %d levels", MaxDepth)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
