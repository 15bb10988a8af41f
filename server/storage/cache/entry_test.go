package cache

import (
	"encoding/json"
	"maps"
	"reflect"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
)

// FuzzWithRevision: for any JSON object with a metadata object, the result
// is that object with only metadata.resourceVersion changed; anything
// else comes back unchanged.
func FuzzWithRevision(f *testing.F) {
	for _, s := range []string{
		`{"kind":"ConfigMap","metadata":{"name":"a"}}`,
		`{"metadata":{}}`,
		`{"spec":{"metadata":{"resourceVersion":"1"}},"metadata":{"name":"x"}}`,
		`{"a":"\"metadata\":{\"resourceVersion\":\"1\"}","metadata":{"resourceVersion":"7","name":"n"}}`,
		`{"metadata":{"resourceVersion":"9"}}`,
		`[1,2]`, `not json`, `{"metadata":"x"}`,
	} {
		f.Add([]byte(s), int64(5))
	}
	f.Fuzz(func(t *testing.T, in []byte, rev int64) {
		if rev <= 0 {
			return
		}
		// The values the cache meets have passed through WithResourceVersion.
		for _, v := range [][]byte{in, withRV(in)} {
			if v == nil {
				continue
			}
			out := withRevision(v, rev)
			var before, after map[string]any
			if json.Unmarshal(v, &before) != nil {
				continue
			}
			if _, ok := before["metadata"].(map[string]any); !ok {
				continue
			}
			if err := json.Unmarshal(out, &after); err != nil {
				t.Fatalf("withRevision(%q) = %q: not JSON: %v", v, out, err)
			}
			md := after["metadata"].(map[string]any)
			if md["resourceVersion"] != jsonInt(rev) {
				t.Fatalf("withRevision(%q) = %q: resourceVersion %v", v, out, md["resourceVersion"])
			}
			delete(md, "resourceVersion")
			bmd := maps.Clone(before["metadata"].(map[string]any))
			delete(bmd, "resourceVersion")
			before["metadata"], after["metadata"] = bmd, md
			if !reflect.DeepEqual(before, after) {
				t.Fatalf("withRevision(%q) = %q changed more than the resourceVersion", v, out)
			}
		}
	})
}

func withRV(in []byte) []byte {
	var m map[string]any
	if json.Unmarshal(in, &m) != nil {
		return nil
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
	}
	b, _ := json.Marshal(m)
	out, err := storage.WithResourceVersion(b, 3)
	if err != nil {
		return nil
	}
	return out
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }
