package patch

import "errors"

// Errors returned by this package. Every error it returns wraps exactly one of
// ErrInvalidPatch, ErrConflict or ErrInvalidDocument (ErrTestFailed and
// ErrTooManyOperations additionally wrap one of those), so a caller can map an
// error to an HTTP status with errors.Is alone:
//
//	ErrInvalidPatch      → 400 BadRequest (kube-apiserver answers 400 for a patch it cannot decode)
//	ErrTooManyOperations → 413 RequestEntityTooLarge (kube's answer for > 10000 JSON patch operations)
//	ErrConflict          → 422 Unprocessable Entity (kube answers 422 when a JSON patch does not apply)
//	ErrTestFailed        → 422 as well; it also matches ErrConflict
//	ErrInvalidDocument   → 500: the stored document was not a JSON object, a server bug
var (
	// ErrInvalidPatch reports a malformed patch document: invalid JSON, a
	// wrong shape, an unknown operation or directive, a bad JSON pointer, or
	// input beyond the package limits (see MaxDepth, MaxOperations,
	// MaxCopyBytes).
	ErrInvalidPatch = errors.New("patch: invalid patch")

	// ErrConflict reports a well-formed patch that does not fit the document:
	// a JSON patch path that does not exist, an array index out of range, or a
	// result that is not a JSON object.
	ErrConflict = errors.New("patch: patch does not apply to the document")

	// ErrTestFailed reports a JSON patch "test" operation whose value did not
	// match. Errors carrying it also match ErrConflict: kube-apiserver answers
	// 422 for it, like every other JSON patch application failure.
	ErrTestFailed = errors.New("patch: test operation failed")

	// ErrTooManyOperations reports a JSON patch with more than MaxOperations
	// operations. Errors carrying it also match ErrInvalidPatch.
	ErrTooManyOperations = errors.New("patch: too many operations")

	// ErrInvalidDocument reports that doc, the document being patched, is not
	// a JSON object. The server stores only objects, so this is a bug there,
	// not in the client's patch.
	ErrInvalidDocument = errors.New("patch: document is not a JSON object")
)
