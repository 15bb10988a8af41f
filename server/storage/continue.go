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
// failure wraps ErrInvalidContinue; what follows it is kube's message for
// the same fault.
func DecodeContinue(token, prefix string) (startKey string, rv int64, err error) {
	t, err := decodeToken(token)
	if err != nil {
		return "", 0, err
	}
	if t.Prefix != prefixHash(prefix) {
		return "", 0, fmt.Errorf("%w: continue key is not valid: issued for another request", ErrInvalidContinue)
	}
	return prefix + t.Start, t.RV, nil
}

// decodeToken decodes a token and checks what does not depend on the
// request: its encoding, version, revision and start key, failing as
// kube's decoding does.
func decodeToken(token string) (continueToken, error) {
	var t continueToken
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return t, fmt.Errorf("%w: continue key is not valid: %v", ErrInvalidContinue, err)
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("%w: continue key is not valid: %v", ErrInvalidContinue, err)
	}
	switch {
	case t.Version != continueVersion:
		return t, fmt.Errorf("%w: continue key is not valid: server does not recognize this encoded version %v", ErrInvalidContinue, t.Version)
	case t.RV <= 0:
		return t, fmt.Errorf("%w: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)", ErrInvalidContinue)
	case t.Start == "":
		// The start key is appended to the prefix, so no token can name a
		// key outside it; an empty one would restart the list silently.
		return t, fmt.Errorf("%w: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)", ErrInvalidContinue)
	}
	return t, nil
}

func prefixHash(prefix string) string {
	h := fnv.New64a()
	h.Write([]byte(prefix))
	return fmt.Sprintf("%016x", h.Sum64())
}
