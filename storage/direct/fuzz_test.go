package direct_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/listwatch/listwatch/storage/direct"
	"github.com/listwatch/listwatch/wire"
)

// FuzzWithRevision: whatever the input, a success yields a JSON object
// whose metadata.resourceVersion is the revision and whose other
// top-level fields are unchanged in meaning.
func FuzzWithRevision(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","resourceVersion":"7"},"spec":{"x":[1,2]}}`), int64(9))
	f.Add([]byte(`{"metadata":{}}`), int64(1))
	f.Add([]byte(`{"kind":"Pod"}`), int64(1))
	f.Add([]byte(`{"metadata":null}`), int64(1))
	f.Add([]byte(`[]`), int64(3))
	f.Fuzz(func(t *testing.T, value []byte, rev int64) {
		out, err := direct.WithRevision(value, rev)
		if err != nil {
			return
		}
		var in, got map[string]json.RawMessage
		if err := json.Unmarshal(value, &in); err != nil {
			t.Fatalf("accepted invalid input %q", value)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("output %q is not an object: %v", out, err)
		}
		var meta struct {
			ResourceVersion string `json:"resourceVersion"`
		}
		if err := json.Unmarshal(got["metadata"], &meta); err != nil || meta.ResourceVersion != strconv.FormatInt(rev, 10) {
			t.Fatalf("output %q: resourceVersion %q, want %d (%v)", out, meta.ResourceVersion, rev, err)
		}
		for k, v := range in {
			if k == "metadata" {
				continue
			}
			if !jsonEqual(t, v, got[k]) {
				t.Fatalf("field %q changed: %s -> %s", k, v, got[k])
			}
		}
	})
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// FuzzListMode: the mode is exact only for Exact or a legacy paged list,
// never both exact and minimum, and every error is
// ErrInvalidResourceVersion.
func FuzzListMode(f *testing.F) {
	for _, s := range []struct {
		rv, match string
		limit     int64
	}{{"", "", 0}, {"0", "", 5}, {"12", "", 5}, {"12", wire.MatchExact, 0}, {"12", wire.MatchNotOlderThan, 1}, {"-1", "", 0}, {"x", "Exact", 0}, {"0", "Exact", 0}} {
		f.Add(s.rv, s.match, s.limit)
	}
	f.Fuzz(func(t *testing.T, rv, match string, limit int64) {
		m, err := direct.ListMode(rv, match, limit)
		if err != nil {
			if !errors.Is(err, direct.ErrInvalidResourceVersion) {
				t.Fatalf("error %v does not wrap ErrInvalidResourceVersion", err)
			}
			return
		}
		if m.Exact() != 0 && m.Minimum() != 0 {
			t.Fatalf("both exact %d and minimum %d", m.Exact(), m.Minimum())
		}
		n := m.Exact() + m.Minimum()
		// The value read is the decimal's value; like kube-apiserver
		// (strconv.ParseUint), leading zeros are accepted: "01" is 1.
		if want, perr := strconv.ParseUint(rv, 10, 63); rv != "" && n != 0 && (perr != nil || int64(want) != n) {
			t.Fatalf("rv %q read as %d", rv, n)
		}
		if m.Exact() != 0 && match != wire.MatchExact && !(match == "" && limit > 0) {
			t.Fatalf("exact read for match %q limit %d", match, limit)
		}
	})
}
