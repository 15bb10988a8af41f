package client

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/wire"
)

// caseVariant returns key with the case of some letters flipped (and, at
// random, a 'K' or 's' spelled as the Kelvin sign or long s, which
// encoding/json also folds); it may return key itself.
func caseVariant(r *rand.Rand, key string) string {
	var b strings.Builder
	for _, c := range key {
		switch {
		case c == 'k' && r.IntN(6) == 0:
			b.WriteRune('\u212a')
		case c == 's' && r.IntN(6) == 0:
			b.WriteRune('\u017f')
		case c >= 'a' && c <= 'z' && r.IntN(2) == 0:
			b.WriteRune(c - 'a' + 'A')
		case c >= 'A' && c <= 'Z' && r.IntN(2) == 0:
			b.WriteRune(c - 'A' + 'a')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

var metaKeyNames = []string{"name", "namespace", "uid", "resourceVersion", "generateName", "deletionTimestamp", "labels", "ownerReferences"}

func metaValue(r *rand.Rand, key string) string {
	switch key {
	case "labels":
		return fmt.Sprintf(`{"l":"v%d"}`, r.IntN(9))
	case "ownerReferences":
		return fmt.Sprintf(`[{"%s":"o%d","%s":"u%d","kind":"K","apiVersion":"v1"}]`,
			caseVariant(r, "name"), r.IntN(9), caseVariant(r, "uid"), r.IntN(9))
	case "deletionTimestamp":
		return fmt.Sprintf(`"2026-01-0%dT00:00:00Z"`, 1+r.IntN(9))
	}
	return fmt.Sprintf(`"%s-%d"`, strings.ToLower(key[:2]), r.IntN(9))
}

// hostileObject is a pod whose metadata holds the real fields plus random
// case variants and duplicates of them, in random order, and sometimes a
// case variant of "metadata" itself.
func hostileObject(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed>>7))
	var members []string
	for _, k := range metaKeyNames {
		for range 1 + r.IntN(3) {
			name := k
			if r.IntN(2) == 0 {
				name = caseVariant(r, k)
			}
			members = append(members, fmt.Sprintf("%q:%s", name, metaValue(r, k)))
		}
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	top := []string{`"apiVersion":"v1"`, `"kind":"Pod"`, `"metadata":{` + strings.Join(members, ",") + `}`, `"spec":{"nodeName":"n"}`}
	if r.IntN(3) == 0 {
		top = append(top, fmt.Sprintf(`%q:{"name":"evil","resourceVersion":"1"}`, caseVariant(r, "Metadata")))
	}
	r.Shuffle(len(top), func(i, j int) { top[i], top[j] = top[j], top[i] })
	return []byte("{" + strings.Join(top, ",") + "}")
}

// checkLikeClientGo decodes data with our decoder and with client-go's
// (case-sensitive) one, and compares what informers and listers read.
func checkLikeClientGo(t *testing.T, data []byte) {
	t.Helper()
	var want corev1.Pod
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &want); err != nil {
		return // not a pod to client-go either
	}
	var got *corev1.Pod
	if err := decodeObject(data, &got); err != nil {
		t.Fatalf("decodeObject(%s): %v", data, err)
	}
	g, w := got.ObjectMeta, want.ObjectMeta
	if g.Name != w.Name || g.Namespace != w.Namespace || g.UID != w.UID || g.ResourceVersion != w.ResourceVersion ||
		g.GenerateName != w.GenerateName || !reflect.DeepEqual(g.DeletionTimestamp, w.DeletionTimestamp) ||
		!reflect.DeepEqual(g.Labels, w.Labels) || !reflect.DeepEqual(g.OwnerReferences, w.OwnerReferences) {
		t.Fatalf("decoding %s\ngot  %+v\nwant %+v", data, g, w)
	}
}

func TestDecodeObjectIgnoresCaseVariants(t *testing.T) {
	data := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","resourceVersion":"7","resourceversion":"1","Name":"b","namespace":"ns"},"METADATA":{"uid":"x"}}`)
	var p *corev1.Pod
	if err := decodeObject(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "a" || p.ResourceVersion != "7" || p.Namespace != "ns" || p.UID != "" {
		t.Fatalf("got %+v", p.ObjectMeta)
	}
	// Lists and watch events go through the same decoding.
	list := []byte(`{"kind":"PodList","metadata":{"resourceVersion":"9","ResourceVersion":"2"},"items":[` + string(data) + `]}`)
	var l wire.List[*corev1.Pod]
	if err := decodeList[*corev1.Pod](list, &l); err != nil {
		t.Fatal(err)
	}
	if l.Metadata.ResourceVersion != "9" || len(l.Items) != 1 || l.Items[0].ResourceVersion != "7" || l.Items[0].Name != "a" {
		t.Fatalf("list: %+v, %+v", l.Metadata, l.Items)
	}
	ev, err := newWatchDecoder[*corev1.Pod](strings.NewReader(`{"type":"ADDED","object":` + string(data) + `}`)).next()
	if err != nil || ev.Object.ResourceVersion != "7" || ev.Object.Name != "a" {
		t.Fatalf("watch: %v %+v", err, ev)
	}
}

func TestDecodeObjectLikeClientGoProperty(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	for seed := range uint64(n) {
		checkLikeClientGo(t, hostileObject(seed))
	}
}

// FuzzDecodeObjectMeta: whatever the spelling of metadata keys, our typed
// decoding reads the same metadata as client-go's case-sensitive one.
func FuzzDecodeObjectMeta(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","NAME":"b","resourceVersion":"2","reſourceVersion":"1"}}`), uint64(0))
	f.Add([]byte(`{"Metadata":{"name":"x"},"metadata":{"ownerReferences":[{"UID":"u","uid":"v"}]}}`), uint64(1))
	f.Add([]byte(`{}`), uint64(2))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		checkLikeClientGo(t, data)
		checkLikeClientGo(t, hostileObject(seed))
		if clean, changed := stripFolded(data, objectKeys); changed && json.Valid(data) && !json.Valid(clean) {
			t.Fatalf("stripping %s gave invalid JSON %s", data, clean)
		}
	})
}

// BenchmarkDecodePod compares decoding a realistic pod with encoding/json
// alone and with decodeObject's key check on top.
func BenchmarkDecodePod(b *testing.B) {
	p := benchPod(1)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u"}}
	data, _ := json.Marshal(p)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out *corev1.Pod
			if err := json.Unmarshal(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("key-check-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, changed := stripFolded(data, objectKeys); changed {
				b.Fatal("changed")
			}
		}
	})
	b.Run("decodeObject", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out *corev1.Pod
			if err := decodeObject(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
