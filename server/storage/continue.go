package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
)

// A continue token says where the next page starts and at which revision
// the list is read. Its start key is relative to the listed prefix, so a
// token can only ever name keys inside the prefix of the request carrying
// it; a hash of the prefix makes a token from another request's prefix an
// error rather than a silent read of the wrong range.
type continueToken struct {
	Version string `json:"v"`
	RV      int64  `json:"rv"`
	Start   string `json:"start"`
	Prefix  string `json:"p"`
}

const continueVersion = "meta.k8s.io/v1"

// EncodeContinue returns the token for a page that continues at nextKey
// (a key under prefix), read at revision rv.
func EncodeContinue(prefix, nextKey string, rv int64) (string, error) {
	if !strings.HasPrefix(nextKey, prefix) || len(nextKey) == len(prefix) {
		return "", fmt.Errorf("%w: key %q is not under %q", ErrInvalidStartKey, nextKey, prefix)
	}
	b, err := json.Marshal(continueToken{
		Version: continueVersion,
		RV:      rv,
		Start:   nextKey[len(prefix):],
		Prefix:  prefixHash(prefix),
	})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeContinue validates a token against the request's prefix and
// returns the first key to read and the revision to read at. Every
// failure wraps ErrInvalidContinue.
func DecodeContinue(token, prefix string) (startKey string, rv int64, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, fmt.Errorf("%w: not base64: %w", ErrInvalidContinue, err)
	}
	var t continueToken
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrInvalidContinue, err)
	}
	switch {
	case t.Version != continueVersion:
		return "", 0, fmt.Errorf("%w: unknown version %q", ErrInvalidContinue, t.Version)
	case t.RV <= 0:
		return "", 0, fmt.Errorf("%w: bad resourceVersion %d", ErrInvalidContinue, t.RV)
	case t.Prefix != prefixHash(prefix):
		return "", 0, fmt.Errorf("%w: issued for another request", ErrInvalidContinue)
	case t.Start == "":
		// The start key is appended to the prefix, so no token can name a
		// key outside it; an empty one would restart the list silently.
		return "", 0, fmt.Errorf("%w: empty start key", ErrInvalidContinue)
	}
	return prefix + t.Start, t.RV, nil
}

func prefixHash(prefix string) string {
	h := fnv.New64a()
	h.Write([]byte(prefix))
	return fmt.Sprintf("%016x", h.Sum64())
}
