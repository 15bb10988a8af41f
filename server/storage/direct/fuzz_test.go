package direct_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/listwatch/listwatch/server/storage/direct"
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
		// A map, not a struct: encoding/json matches a struct's field
		// names without regard to case, so "resourceversion" (another
		// member, which kube's case-sensitive decoding ignores) would
		// be read as the resourceVersion.
		var meta map[string]any
		if err := json.Unmarshal(got["metadata"], &meta); err != nil || meta["resourceVersion"] != strconv.FormatInt(rev, 10) {
			t.Fatalf("output %q: resourceVersion %v, want %d (%v)", out, meta["resourceVersion"], rev, err)
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
