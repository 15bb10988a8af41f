package storage

import (
	"fmt"

	apistorage "k8s.io/apiserver/pkg/storage"
)

// A continue token says where the next page starts and at which revision
// the list is read. Tokens are kube-apiserver's own (k8s.io/apiserver's
// EncodeContinue and DecodeContinue): base64 of the JSON
// {"v":"meta.k8s.io/v1","rv":…,"start":…}, the start key relative to the
// listed prefix. As in kube, a token continues any list it is sent with
// (another namespace's, another selector's): it is decoded against the
// request's prefix, and its start key, cleaned as a path and appended to
// that prefix, can never name a key outside it.

// EncodeContinue returns the token for a page that continues at nextKey
// (a key under prefix), read at revision rv.
func EncodeContinue(prefix, nextKey string, rv int64) (string, error) {
	if len(nextKey) <= len(prefix) || nextKey[:len(prefix)] != prefix {
		return "", fmt.Errorf("%w: key %q is not under %q", ErrInvalidStartKey, nextKey, prefix)
	}
	return apistorage.EncodeContinue(nextKey, prefix, rv)
}

// DecodeContinue decodes a token against the request's prefix and returns
// the first key to read and the revision to read at. Every failure wraps
// ErrInvalidContinue; what follows it is kube's message for the same
// fault.
func DecodeContinue(token, prefix string) (startKey string, rv int64, err error) {
	key, rv, err := apistorage.DecodeContinue(token, prefix)
	switch {
	case err != nil:
		return "", 0, fmt.Errorf("%w: %w", ErrInvalidContinue, err)
	case rv < 0:
		// kube's decoder lets a negative revision through, to fail later
		// in etcd; it is refused here with the zero revision's message.
		return "", 0, fmt.Errorf("%w: %w", ErrInvalidContinue, apistorage.ErrInvalidStartRV)
	}
	return key, rv, nil
}

// decodeToken checks what of a token does not depend on the request:
// its encoding, version, revision and start key, failing as kube's
// decoding does.
func decodeToken(token string) error {
	_, _, err := DecodeContinue(token, "/")
	return err
}
