package cache

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"testing"

	"github.com/listwatch/listwatch/object"
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

// FuzzEntryMatches: an entry's compact attributes decide every selector as
// the maps they were built from do.
func FuzzEntryMatches(f *testing.F) {
	f.Add("app=web,tier", "metadata.name=a", "app", "web", "tier", "", "a", "ns")
	f.Add("!app,x in (1,2)", "metadata.namespace!=ns", "x", "2", "y", "3", "b", "")
	f.Add("n>3", "spec.nodeName=", "n", "5", "m", "x", "", "ns")
	f.Add("", "spec.nodeName=b,metadata.name=b", "n", "5", "m", "b", "b", "ns")
	f.Add("", "metadata.name=c/d", "n", "5", "m", "d", "c/d", "ns")
	f.Fuzz(func(t *testing.T, labelSel, fieldSel, k1, v1, k2, v2, name, ns string) {
		ls, err1 := object.ParseLabelSelector(labelSel)
		fs, err2 := object.ParseFieldSelector(fieldSel)
		if err1 != nil || err2 != nil {
			return
		}
		labels := map[string]string{k1: v1, k2: v2}
		// spec.nodeName may equal the name too: such a field is read
		// from the key as metadata.name is.
		fields := map[string]string{"metadata.name": name, "metadata.namespace": ns, "spec.nodeName": v2}
		p := storage.Predicate{Label: ls, Field: fs}
		e := newEntry(storage.KV{Key: "/registry/things/" + ns + "/" + name, Value: []byte("{}")}, func([]byte) (map[string]string, map[string]string, error) {
			return labels, fields, nil
		})
		if got, want := e.matches(p), p.MatchesAttrs(labels, fields); got != want {
			t.Fatalf("labels %v fields %v, selector %q / %q: compact %v, maps %v", labels, fields, labelSel, fieldSel, got, want)
		}
	})
}

// BenchmarkEntryAttrs reports the heap an entry's attributes keep per
// object (bytes/entry) and what building them costs, for ConfigMaps with
// two labels as the 100k benchmark fixture has.
func BenchmarkEntryAttrs(b *testing.B) {
	const n = 10000
	values := make([][]byte, n)
	for i := range values {
		values[i] = fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%06d","namespace":"ns-%d","labels":{"app":"bench","shard":"%d"}},"data":{"k":"v"}}`, i, i%10, i%7)
	}
	b.ReportAllocs()
	var perEntry float64
	for b.Loop() {
		entries := make([]*entry, n)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i, v := range values {
			entries[i] = newEntry(storage.KV{Key: fmt.Sprintf("/registry/configmaps/ns-%d/cm-%06d", i%10, i), Value: v, Revision: 1}, storage.DefaultAttrs)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perEntry = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(entries)
	}
	b.ReportMetric(perEntry, "bytes/entry")
}
