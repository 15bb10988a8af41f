package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// strictJSON is RFC 8259's JSON text exchanged between systems: valid
// JSON, encoded as UTF-8 (section 8.1), with no escaped lone surrogate
// (section 8.2, which strict parsers refuse).
func strictJSON(t *testing.T, what string, b []byte) {
	t.Helper()
	if !utf8.Valid(b) || !json.Valid(b) {
		t.Fatalf("%s is not valid UTF-8 JSON: %q", what, b)
	}
	if hasLoneSurrogateEscape(b) {
		t.Fatalf("%s has an escaped lone surrogate: %s", what, b)
	}
}

// TestInvalidUTF8Replaced: invalid UTF-8 in a body's keys and values is
// stored as U+FFFD, one per bad byte, as decoding into Go strings does in
// kube, and so is an escaped lone surrogate; every answer is then valid
// JSON for strict parsers and for client-go.
func TestInvalidUTF8Replaced(t *testing.T) {
	e := newEnv(t)
	body := "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"u\",\"annotations\":{\"a\":\"x\xffy\"}}," +
		"\"data\":{\"k\":\"\xfea\xc3\x28b\",\"s\":\"\\ud800\\ud83d\\ude00\",\"ok\":\"\xe2\x82\xac\",\"extra\":\"\xed\xa0\x80\"}}"
	r := e.do("POST", cmPath, body)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	strictJSON(t, "create answer", r.body)
	list := e.do("GET", cmPath, nil)
	strictJSON(t, "list", list.body)
	w := e.watch(cmPath + "?watch=1&resourceVersion=0")
	defer w.close()
	ev := w.expect("ADDED", "u")
	if b, _ := json.Marshal(ev); !utf8.Valid(b) {
		t.Fatalf("watch event %q", b)
	}

	cs, err := kubernetes.NewForConfig(e.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("client-go list: %v %v", err, cms)
	}
	cm := cms.Items[0]
	want := map[string]string{"k": "\uFFFDa\uFFFD(b", "s": "\uFFFD\U0001F600", "ok": "€", "extra": "\uFFFD\uFFFD\uFFFD"}
	if fmt.Sprint(cm.Data) != fmt.Sprint(want) || cm.Annotations["a"] != "x\uFFFDy" {
		t.Fatalf("client-go read data %q annotations %q", cm.Data, cm.Annotations)
	}
}

// deepWidget is a custom resource (schemaless, so nothing is pruned) whose
// field x nests objects so that the whole body is depth levels deep; the
// innermost object is {"v":leaf}.
func deepWidget(name string, depth int, leaf string) string {
	inner := `{"v":` + leaf + `}`
	n := depth - 2 // the body and x's object are two of the levels
	return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `"},"x":` +
		strings.Repeat(`{"a":`, n) + inner + strings.Repeat(`}`, n) + `}`
}

// TestNestingLimitSameForCreateAndPatch: an object at the deepest nesting
// a create accepts can be patched with a merge patch and a JSON patch, and
// going one level deeper is refused by create and both patches with the
// same Status.
func TestNestingLimitSameForCreateAndPatch(t *testing.T) {
	e := newEnv(t)
	const max = maxDepth
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	const widgetsPath = "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", widgetsPath, deepWidget("deep", max, "1"))
	msg := fmt.Sprintf("exceeded max depth of %d", max)
	e.expectStatus(400, "BadRequest", msg, "POST", widgetsPath, deepWidget("deeper", max+1, "1"))

	mergeTo := func(leaf string) string {
		n := max - 2
		return `{"x":` + strings.Repeat(`{"a":`, n) + `{"v":` + leaf + `}` + strings.Repeat(`}`, n) + `}`
	}
	jsonTo := func(leaf string) string {
		return `[{"op":"replace","path":"/x` + strings.Repeat("/a", max-2) + `/v","value":` + leaf + `}]`
	}
	merge := []string{"Content-Type", "application/merge-patch+json"}
	jp := []string{"Content-Type", "application/json-patch+json"}
	e.must(200, "PATCH", widgetsPath+"/deep", mergeTo("2"), merge...)
	e.must(200, "PATCH", widgetsPath+"/deep", jsonTo("3"), jp...)
	e.expectStatus(400, "BadRequest", msg, "PATCH", widgetsPath+"/deep", mergeTo("{}"), merge...)
	e.expectStatus(400, "BadRequest", msg, "PATCH", widgetsPath+"/deep", jsonTo("{}"), jp...)
	e.expectStatus(400, "BadRequest", msg, "PUT", widgetsPath+"/deep", deepWidget("deep", max+1, "1"))
	if got := e.do("GET", widgetsPath+"/deep", nil).body; !strings.Contains(string(got), `{"v":3}`) {
		t.Fatalf("stored %.200s", got)
	}
}
