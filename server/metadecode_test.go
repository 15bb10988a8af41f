package server

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

func warnings(r response) []string { return r.hdr.Values("Warning") }

// TestMetadataCaseVariantsAndDuplicates: metadata keys that are not
// ObjectMeta fields spelled exactly are dropped with kube's warnings, or
// refused under fieldValidation=Strict; a duplicated key keeps its last
// value. This holds for create, update, merge patch and status writes.
func TestMetadataCaseVariantsAndDuplicates(t *testing.T) {
	e := newEnv(t)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceversion":"1","Name":"evil","name":"a","labels":{"k":"1","k":"2"}},"data":{"k":"v"}}`

	e.expectStatus(400, "BadRequest",
		`ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "metadata.resourceversion", unknown field "metadata.Name", duplicate field "metadata.name", duplicate field "metadata.labels.k"`,
		"POST", cmPath+"?fieldValidation=Strict", body)

	r := e.do("POST", cmPath, body)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	want := []string{`299 - "unknown field \"metadata.resourceversion\""`, `299 - "unknown field \"metadata.Name\""`,
		`299 - "duplicate field \"metadata.name\""`, `299 - "duplicate field \"metadata.labels.k\""`}
	if got := warnings(r); !slices.Equal(got, want) {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	obj := r.json(t)
	md := obj["metadata"].(map[string]any)
	if md["name"] != "a" || md["resourceversion"] != nil || md["Name"] != nil || path(obj, "metadata", "labels", "k") != "2" {
		t.Fatalf("created metadata: %v", md)
	}
	if r := e.do("POST", cmPath+"?fieldValidation=Ignore", strings.Replace(body, `"name":"a"`, `"name":"b"`, 1)); r.code != 201 || len(warnings(r)) != 0 {
		t.Fatalf("Ignore: %d %q", r.code, warnings(r))
	}
	// The stored form has none of them.
	raw := e.do("GET", cmPath+"/a", nil).body
	for _, bad := range []string{"resourceversion", "Name", "evil", `"k":"1"`} {
		if strings.Contains(string(raw), bad) {
			t.Fatalf("stored %s keeps %s", raw, bad)
		}
	}

	// Update.
	rv := md["resourceVersion"].(string)
	upd := fmt.Sprintf(`{"metadata":{"name":"a","resourceVersion":%q,"RESOURCEVERSION":"1","uid":%q,"UID":"v"}}`, rv, md["uid"])
	r = e.do("PUT", cmPath+"/a", upd)
	if r.code != 200 || !slices.Equal(warnings(r), []string{`299 - "unknown field \"metadata.RESOURCEVERSION\""`, `299 - "unknown field \"metadata.UID\""`}) {
		t.Fatalf("update: %d %q %s", r.code, warnings(r), r.body)
	}
	e.expectStatus(400, "BadRequest", `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "metadata.RESOURCEVERSION", unknown field "metadata.UID"`,
		"PUT", cmPath+"/a?fieldValidation=Strict", upd)

	// Merge patch: the result is checked, decoded as kube decodes it (the
	// merge re-encodes the changed metadata with sorted keys).
	mp := `{"metadata":{"resourceversion":"1","ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u","UID":"w"}]}}`
	r = e.do("PATCH", cmPath+"/a", mp, "Content-Type", "application/merge-patch+json")
	if r.code != 200 || !slices.Equal(warnings(r), []string{`299 - "unknown field \"metadata.ownerReferences[0].UID\""`, `299 - "unknown field \"metadata.resourceversion\""`}) {
		t.Fatalf("patch: %d %q %s", r.code, warnings(r), r.body)
	}
	if p := r.json(t); path(p, "metadata", "resourceversion") != nil || strings.Contains(string(r.body), `"UID"`) {
		t.Fatalf("patched: %s", r.body)
	}
	st := e.expectStatus(422, "Invalid", "", "PATCH", cmPath+"/a?fieldValidation=Strict", mp, "Content-Type", "application/merge-patch+json")
	if msg := st["message"].(string); !strings.HasPrefix(msg, ` "" is invalid: patch: Invalid value: "{`) ||
		!strings.HasSuffix(msg, `: strict decoding error: unknown field "metadata.ownerReferences[0].UID", unknown field "metadata.resourceversion"`) {
		t.Fatalf("strict patch message %q", msg)
	}

	// A merge patch's own duplicated metadata keys are reported first.
	r = e.do("PATCH", cmPath+"/a", `{"metadata":{"labels":{"p":"1","p":"2"},"Finalizers":[]}}`, "Content-Type", "application/merge-patch+json")
	if r.code != 200 || !slices.Equal(warnings(r), []string{`299 - "duplicate field \"metadata.labels.p\""`, `299 - "unknown field \"metadata.Finalizers\""`}) ||
		path(r.json(t), "metadata", "labels", "p") != "2" {
		t.Fatalf("patch with duplicates: %d %q %s", r.code, warnings(r), r.body)
	}

	// An unknown directive is refused as kube's options validation does.
	e.expectStatus(422, "Invalid", `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"`,
		"POST", cmPath+"?fieldValidation=strict", body)
	e.expectStatus(422, "Invalid", "", "PUT", cmPath+"/a?fieldValidation=x", upd)
	e.expectStatus(422, "Invalid", "", "PATCH", cmPath+"/a?fieldValidation=x", mp, "Content-Type", "application/merge-patch+json")

	// Status writes decode their body the same way.
	pods := "/api/v1/namespaces/default/pods"
	e.must(201, "POST", pods, map[string]any{"metadata": map[string]any{"name": "p"}, "spec": map[string]any{"nodeName": "n1",
		"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}})
	r = e.do("PATCH", pods+"/p/status", `{"metadata":{"Labels":{"a":"b"}},"status":{"phase":"Running"}}`, "Content-Type", "application/merge-patch+json")
	if r.code != 200 || !slices.Equal(warnings(r), []string{`299 - "unknown field \"metadata.Labels\""`}) {
		t.Fatalf("status patch: %d %q %s", r.code, warnings(r), r.body)
	}
	cur := e.must(200, "GET", pods+"/p", nil)
	e.expectStatus(400, "BadRequest", "", "PUT", pods+"/p/status?fieldValidation=Strict",
		fmt.Sprintf(`{"metadata":{"name":"p","resourceVersion":%q,"Namespace":"x"},"status":{"phase":"Failed"}}`, path(cur, "metadata", "resourceVersion")))
}

// FuzzMetaKeySpellings: whatever keys a body's metadata has, the decoded
// metadata holds only ObjectMeta fields spelled exactly, each the last
// value sent under that exact key; the stored form decoded with
// encoding/json (case-insensitive, as typed clients decode) reads the same
// name, namespace and resourceVersion; and every key dropped is reported.
func FuzzMetaKeySpellings(f *testing.F) {
	f.Add(uint64(1), "resourceversion")
	f.Add(uint64(2), "Name")
	f.Add(uint64(3), "name")
	f.Add(uint64(4), "nameſpace")
	f.Fuzz(func(t *testing.T, seed uint64, extra string) {
		r := rand.New(rand.NewPCG(seed, 3))
		keys := []string{"name", "namespace", "resourceVersion", "uid", "generateName", extra}
		var members []string
		last := map[string]string{}
		for i := range 2 + r.IntN(12) {
			k := keys[r.IntN(len(keys))]
			if r.IntN(2) == 0 {
				k = flipCase(r, k)
			}
			v := fmt.Sprintf("v%d", i)
			kq, _ := json.Marshal(k)
			members = append(members, fmt.Sprintf(`%s:"%s"`, kq, v))
			last[k] = v
		}
		body := `{"metadata":{` + strings.Join(members, ",") + `}}`
		d, err := decodeDoc([]byte(body))
		if err != nil {
			t.Fatalf("decodeDoc(%s): %v", body, err)
		}
		dropped := 0
		for k, v := range last {
			if !objectMetaFields[k] {
				dropped++
				if _, ok := d.meta[k]; ok {
					t.Fatalf("%q kept from %s", k, body)
				}
				continue
			}
			if got := d.metaString(k); got != v {
				t.Fatalf("%s = %q, want %q (last sent) in %s", k, got, v, body)
			}
		}
		if dropped > 0 && len(d.strict) == 0 || len(members) > len(last) && len(d.strict) == 0 {
			t.Fatalf("nothing reported for %s", body)
		}
		for k := range d.meta {
			if !objectMetaFields[k] {
				t.Fatalf("unknown %q kept from %s", k, body)
			}
		}
		var typed struct {
			Metadata wire.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(d.encodeWithRV("5"), &typed); err != nil {
			t.Fatal(err)
		}
		if typed.Metadata.Name != d.metaString("name") || typed.Metadata.Namespace != d.metaString("namespace") || typed.Metadata.ResourceVersion != "5" {
			t.Fatalf("a case-insensitive decoder reads %+v from %s", typed.Metadata, d.encode())
		}
	})
}

func flipCase(r *rand.Rand, s string) string {
	b := []rune(s)
	for i, c := range b {
		if r.IntN(2) == 0 {
			switch {
			case c == 's' && r.IntN(3) == 0:
				b[i] = 'ſ'
			case c >= 'a' && c <= 'z':
				b[i] = c - 'a' + 'A'
			case c >= 'A' && c <= 'Z':
				b[i] = c - 'A' + 'a'
			}
		}
	}
	return string(b)
}
