package patch

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// The oracle tests run the same randomized inputs through this package and
// through the implementations kube-apiserver uses, and require the same
// answer. Known, intentional differences are recognised by name; anything
// else fails.

const oracleRounds = 3000

func randScalar(r *rand.Rand) any {
	switch r.Intn(5) {
	case 0:
		return json.Number(fmt.Sprint(r.Intn(5)))
	case 1:
		return r.Intn(2) == 0
	case 2:
		return nil
	default:
		return string(rune('a' + r.Intn(4)))
	}
}

func randValue(r *rand.Rand, depth int) any {
	if depth == 0 || r.Intn(3) == 0 {
		return randScalar(r)
	}
	if r.Intn(3) == 0 {
		n := r.Intn(3)
		l := make([]any, n)
		for i := range l {
			l[i] = randValue(r, depth-1)
		}
		return l
	}
	m := map[string]any{}
	for i := r.Intn(4); i > 0; i-- {
		m[string(rune('p'+r.Intn(4)))] = randValue(r, depth-1)
	}
	return m
}

func randObject(r *rand.Rand, depth int) map[string]any {
	for {
		if m, ok := randValue(r, depth).(map[string]any); ok {
			return m
		}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hasNullInArrayObject reports an object member set to null inside an array:
// evanphx/json-patch v4 prunes those when the target lacks the field, RFC 7386
// copies arrays verbatim. This package follows the RFC.
func hasNullInArrayObject(v any, inArray bool) bool {
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			if (e == nil && inArray) || hasNullInArrayObject(e, inArray) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if hasNullInArrayObject(e, true) {
				return true
			}
		}
	}
	return false
}

func TestMergePatchMatchesEvanphx(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	known := 0
	for i := 0; i < oracleRounds; i++ {
		doc := mustJSON(t, randObject(r, 4))
		pv := randObject(r, 4)
		p := mustJSON(t, pv)
		got, err := MergePatch(doc, p)
		if err != nil {
			t.Fatalf("MergePatch(%s, %s): %v", doc, p, err)
		}
		want, err := jsonpatch.MergePatch(doc, p)
		if err != nil {
			t.Fatalf("oracle MergePatch(%s, %s): %v", doc, p, err)
		}
		if sameJSON(t, got, want) {
			continue
		}
		if hasNullInArrayObject(pv, false) {
			known++
			continue
		}
		t.Fatalf("MergePatch(%s, %s)\n got  %s\n want %s", doc, p, got, want)
	}
	t.Logf("%d rounds, %d known differences (nulls inside arrays)", oracleRounds, known)
}

func randPointer(r *rand.Rand, doc any) string {
	var b strings.Builder
	cur := doc
	for r.Intn(4) != 0 {
		switch c := cur.(type) {
		case map[string]any:
			if len(c) == 0 || r.Intn(5) == 0 {
				b.WriteString("/" + string(rune('p'+r.Intn(5))))
				return b.String()
			}
			keys := sortedKeys(c)
			k := keys[r.Intn(len(keys))]
			b.WriteString("/" + k)
			cur = c[k]
		case []any:
			i := r.Intn(len(c) + 2)
			if r.Intn(6) == 0 {
				b.WriteString("/-")
				return b.String()
			}
			fmt.Fprintf(&b, "/%d", i)
			if i >= len(c) {
				return b.String()
			}
			cur = c[i]
		default:
			return b.String()
		}
	}
	return b.String()
}

func TestJSONPatchMatchesEvanphx(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	ops := []string{"add", "remove", "replace", "move", "copy", "test"}
	agreedErrors, knownTestNull, oracleCrashes := 0, 0, 0
	for i := 0; i < oracleRounds; i++ {
		docV := randObject(r, 4)
		doc := mustJSON(t, docV)
		var patch []map[string]any
		for n := 1 + r.Intn(3); n > 0; n-- {
			op := map[string]any{"op": ops[r.Intn(len(ops))], "path": randPointer(r, docV)}
			switch op["op"] {
			case "add", "replace":
				op["value"] = randValue(r, 2)
			case "test":
				if r.Intn(2) == 0 {
					op["value"] = randValue(r, 2)
				} else if v, err := (&patchState{root: mustDecode(t, doc)}).get(mustPointer(t, op["path"].(string))); err == nil {
					op["value"] = v
				} else {
					op["value"] = nil
				}
			case "move", "copy":
				op["from"] = randPointer(r, docV)
			}
			patch = append(patch, op)
		}
		p := mustJSON(t, patch)
		if strings.Contains(string(p), `"path":""`) || strings.Contains(string(p), `"from":""`) {
			continue // whole-document operations: see TestJSONPatchOperations
		}
		got, err := JSONPatch(doc, p)
		dp, derr := jsonpatch.DecodePatch(p)
		if derr != nil {
			t.Fatalf("oracle DecodePatch(%s): %v", p, derr)
		}
		want, werr, crashed := applyRecovering(dp, doc)
		switch {
		case crashed:
			oracleCrashes++ // evanphx v4 dereferences nil comparing nested nulls in "test"
		case err != nil && werr != nil:
			agreedErrors++
		case err != nil && werr == nil && knownJSONPatchDifference(t, doc, patch):
			knownTestNull++
		case err == nil && werr == nil:
			if !sameJSON(t, got, want) {
				t.Fatalf("JSONPatch(%s, %s)\n got  %s\n want %s", doc, p, got, want)
			}
		default:
			t.Fatalf("JSONPatch(%s, %s): error %v, oracle error %v", doc, p, err, werr)
		}
	}
	t.Logf("%d rounds, %d where both refused the patch, %d known differences, %d oracle panics", oracleRounds, agreedErrors, knownTestNull, oracleCrashes)
}

func applyRecovering(p jsonpatch.Patch, doc []byte) (out []byte, err error, crashed bool) {
	defer func() {
		if recover() != nil {
			crashed = true
		}
	}()
	out, err = p.Apply(doc)
	return out, err, false
}

// knownJSONPatchDifference recognises the known differences: evanphx/json-patch
// v4 lets {"op":"test","value":null} pass on a path that does not exist, and
// lets "replace" create a missing object member, and "copy" from a missing
// member copies null. RFC 6902 requires the target
// location of both to exist, and this package does.
func knownJSONPatchDifference(t testing.TB, doc []byte, patch []map[string]any) bool {
	st := patchState{root: mustDecode(t, doc), copyBudget: MaxCopyBytes}
	for _, raw := range patch {
		op, err := parseOperation(mustDecode(t, mustJSON(t, raw)))
		if err != nil {
			return false
		}
		if (op.op == "test" && op.value == nil) || op.op == "replace" {
			if _, err := st.get(op.path); err != nil {
				return true
			}
		}
		if op.op == "copy" {
			if _, err := st.get(op.from); err != nil {
				return true
			}
		}
		if st.apply(op) != nil {
			return false
		}
	}
	return false
}

func mustPointer(t testing.TB, s string) pointer {
	p, err := parsePointer(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Pod-shaped random documents and strategic patches, with the fields whose
// strategies matter.

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }

func randNames(r *rand.Rand, prefix string, n int) []string {
	perm := r.Perm(n)
	k := r.Intn(n + 1)
	out := make([]string, k)
	for i := 0; i < k; i++ {
		out[i] = fmt.Sprintf("%s%d", prefix, perm[i])
	}
	return out
}

func randEnv(r *rand.Rand, patch bool) []any {
	var env []any
	for _, n := range randNames(r, "E", 3) {
		e := map[string]any{"name": n, "value": pick(r, "x", "y")}
		if patch && r.Intn(5) == 0 {
			e = map[string]any{"name": n, "$patch": "delete"}
		}
		env = append(env, e)
	}
	return env
}

func randContainer(r *rand.Rand, name string, patch bool) map[string]any {
	c := map[string]any{"name": name}
	if r.Intn(2) == 0 {
		c["image"] = pick(r, "img1", "img2")
	}
	if patch && r.Intn(6) == 0 {
		c["image"] = nil
	}
	if r.Intn(2) == 0 {
		c["env"] = randEnv(r, patch)
	}
	if r.Intn(3) == 0 {
		var ports []any
		for _, p := range randNames(r, "", 3) {
			ports = append(ports, map[string]any{"containerPort": json.Number("80" + p), "protocol": "TCP"})
		}
		c["ports"] = ports
	}
	if r.Intn(3) == 0 {
		c["args"] = []any{pick(r, "a", "b"), pick(r, "c", "d")}
	}
	return c
}

func randPod(r *rand.Rand, patch bool) map[string]any {
	meta := map[string]any{}
	if r.Intn(2) == 0 {
		labels := map[string]any{}
		for _, n := range randNames(r, "l", 3) {
			labels[n] = pick[any](r, "v1", "v2")
			if patch && r.Intn(4) == 0 {
				labels[n] = nil
			}
		}
		meta["labels"] = labels
	}
	if r.Intn(2) == 0 {
		var fs []any
		for _, n := range randNames(r, "f", 4) {
			fs = append(fs, n)
		}
		meta["finalizers"] = fs
	}
	if patch && r.Intn(4) == 0 {
		del := []any{}
		for _, n := range randNames(r, "f", 4) {
			if fs, _ := meta["finalizers"].([]any); !containsAny(fs, n) {
				del = append(del, n)
			}
		}
		meta["$deleteFromPrimitiveList/finalizers"] = del
	}
	if r.Intn(3) == 0 {
		var refs []any
		for _, u := range randNames(r, "u", 3) {
			refs = append(refs, map[string]any{"uid": u, "name": pick(r, "a", "b"), "kind": "K", "apiVersion": "v1"})
		}
		meta["ownerReferences"] = refs
	}
	spec := map[string]any{}
	if r.Intn(4) != 0 {
		var cs []any
		names := randNames(r, "c", 4)
		for _, n := range names {
			if patch && r.Intn(6) == 0 {
				cs = append(cs, map[string]any{"name": n, "$patch": "delete"})
				continue
			}
			cs = append(cs, randContainer(r, n, patch))
		}
		if patch && r.Intn(10) == 0 {
			cs = append(cs, map[string]any{"$patch": "replace"})
		}
		spec["containers"] = cs
		if patch && r.Intn(3) == 0 {
			// A $setElementOrder that the patch list follows, with extra
			// names mixed in.
			var order []any
			for _, n := range names {
				if r.Intn(3) == 0 {
					order = append(order, map[string]any{"name": "c9"})
				}
				order = append(order, map[string]any{"name": n})
			}
			if !hasDirectiveElement(cs) {
				spec["$setElementOrder/containers"] = order
			}
		}
	}
	if r.Intn(3) == 0 {
		var ts []any
		for _, k := range randNames(r, "t", 2) {
			ts = append(ts, map[string]any{"key": k, "operator": "Exists"})
		}
		spec["tolerations"] = ts
	}
	if r.Intn(3) == 0 {
		var vs []any
		for _, n := range randNames(r, "v", 3) {
			v := map[string]any{"name": n}
			src := pick(r, "emptyDir", "hostPath")
			if src == "emptyDir" {
				v["emptyDir"] = map[string]any{}
			} else {
				v["hostPath"] = map[string]any{"path": "/" + n}
			}
			if patch && r.Intn(2) == 0 {
				v["$retainKeys"] = []any{"name", src}
			}
			vs = append(vs, v)
		}
		spec["volumes"] = vs
	}
	if r.Intn(4) == 0 {
		spec["nodeName"] = pick(r, "n1", "n2")
	}
	pod := map[string]any{"metadata": meta, "spec": spec}
	if patch && r.Intn(8) == 0 {
		pod["spec"] = nil
	}
	return pod
}

func containsAny(l []any, v any) bool {
	for _, e := range l {
		if e == v {
			return true
		}
	}
	return false
}

func hasDirectiveElement(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any)["$patch"]; ok {
			return true
		}
	}
	return false
}

// typedRoundTrip decodes into a corev1.Pod and encodes again, as
// kube-apiserver does after applying a strategic merge patch: fields the type
// does not have (such as directive keys Kubernetes leaves in subtrees the
// document lacked) disappear.
func typedRoundTrip(t testing.TB, b []byte) []byte {
	var pod corev1.Pod
	if err := json.Unmarshal(b, &pod); err != nil {
		t.Fatalf("decoding %s as a Pod: %v", b, err)
	}
	return mustJSON(t, &pod)
}

func TestStrategicMergePatchMatchesApimachinery(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	schema, _ := SchemaFor("", "Pod")
	var exact, typed, leftovers, bothErr int
	for i := 0; i < oracleRounds; i++ {
		doc := mustJSON(t, randPod(r, false))
		p := mustJSON(t, randPod(r, true))
		got, err := StrategicMergePatch(doc, p, schema)
		want, werr := strategicpatch.StrategicMergePatch(doc, p, &corev1.Pod{})
		switch {
		case err != nil && werr != nil:
			bothErr++
			continue
		case err != nil || werr != nil:
			t.Fatalf("StrategicMergePatch(%s, %s): error %v, oracle error %v", doc, p, err, werr)
		}
		if sameJSON(t, got, want) {
			exact++
			continue
		}
		if reflect.DeepEqual(mustDecode(t, typedRoundTrip(t, got)), mustDecode(t, typedRoundTrip(t, want))) {
			typed++
			continue
		}
		// Known difference: Kubernetes copies patch values verbatim into a
		// replaced list or a subtree the document lacks, directives and nulls
		// included; this package applies them. Applying them to Kubernetes'
		// output must then give ours.
		cleaned, _, cerr := fromPatch(mustDecode(t, want), schema)
		if cerr == nil && reflect.DeepEqual(mustDecode(t, typedRoundTrip(t, got)), mustDecode(t, typedRoundTrip(t, mustJSON(t, cleaned)))) {
			leftovers++
			continue
		}
		t.Fatalf("StrategicMergePatch(%s, %s)\n got  %s\n want %s", doc, p, got, want)
	}
	t.Logf("%d rounds: %d identical, %d identical as typed Pods, %d differ only by directives Kubernetes copies verbatim, %d refused by both",
		oracleRounds, exact, typed, leftovers, bothErr)
}
