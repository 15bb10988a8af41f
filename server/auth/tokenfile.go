package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/server/request"
)

// ErrTokenFile wraps every error of ParseTokenFile.
var ErrTokenFile = errors.New("auth: token file")

// ErrInvalidToken is returned for a bearer token that is not in the file.
var ErrInvalidToken = errors.New("auth: invalid bearer token")

// TokenFile authenticates "Authorization: Bearer <token>" against a static
// token file. The zero value knows no tokens.
type TokenFile struct {
	// entries holds one element per distinct token. Tokens are kept only as
	// SHA-256 digests, and every lookup compares against all of them, so
	// neither timing nor a memory dump reveals a token.
	entries []tokenEntry
}

type tokenEntry struct {
	digest [sha256.Size]byte
	user   request.User
}

var _ Authenticator = (*TokenFile)(nil)

// ParseTokenFile reads Kubernetes' static token file format: CSV records of
// token,user,uid and optionally a fourth column of comma-separated groups
// ("group1,group2", quoted because of its commas). The rules are kube's
// (k8s.io/apiserver tokenfile.NewCSV): standard CSV quoting, blank lines
// skipped, no comment syntax, at least three columns, a record with an empty
// token skipped, and a repeated token takes the user of its last record.
func ParseTokenFile(r io.Reader) (*TokenFile, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	tf := &TokenFile{}
	index := map[[sha256.Size]byte]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTokenFile, err)
		}
		if len(rec) < 3 {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("%w: line %d: need at least 3 columns (token, user name, user uid), found %d",
				ErrTokenFile, line, len(rec))
		}
		if rec[0] == "" {
			continue
		}
		e := tokenEntry{digest: sha256.Sum256([]byte(rec[0])), user: request.User{Name: rec[1], UID: rec[2]}}
		if len(rec) >= 4 {
			e.user.Groups = strings.Split(rec[3], ",")
		}
		if i, dup := index[e.digest]; dup {
			tf.entries[i] = e
			continue
		}
		index[e.digest] = len(tf.entries)
		tf.entries = append(tf.entries, e)
	}
	return tf, nil
}

// Len is the number of distinct tokens.
func (t *TokenFile) Len() int { return len(t.entries) }

// Authenticate implements Authenticator with kube's bearer rules: the header
// is trimmed and split on single spaces; the scheme is case-insensitive; the
// token is the second field (anything after a further space is ignored); an
// empty token is no credential at all.
func (t *TokenFile) Authenticate(r *http.Request) (*request.User, bool, error) {
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	if auth == "" {
		return nil, false, nil
	}
	parts := strings.SplitN(auth, " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return nil, false, nil
	}
	u, ok := t.lookup(parts[1])
	if !ok {
		return nil, false, ErrInvalidToken
	}
	return u, true, nil
}

// lookup compares the token's digest with every entry's, without an early
// exit, and returns a copy of the matching user.
func (t *TokenFile) lookup(token string) (*request.User, bool) {
	d := sha256.Sum256([]byte(token))
	match := -1
	for i := range t.entries {
		eq := subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return nil, false
	}
	u := t.entries[match].user
	u.Groups = slices.Clone(u.Groups)
	return &u, true
}
