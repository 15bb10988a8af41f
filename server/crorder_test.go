package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKeyOrdered: keyOrdered writes a custom resource as kube's
// unstructured encoding does: every object's members in key order, at
// every depth and in arrays, numbers as their int64 or float64, strings
// as encoding/json writes them.
func TestKeyOrdered(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, `{}`},
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"kind":"K","apiVersion":"v","metadata":{"name":"n","labels":{"z":"1","a":"2"}},"Upper":1,"_u":2,"spec":{"zeta":1.50,"alpha":1e3,"big":123456789012345678901234,"i":-7}}`,
			`{"Upper":1,"_u":2,"apiVersion":"v","kind":"K","metadata":{"labels":{"a":"2","z":"1"},"name":"n"},"spec":{"alpha":1000,"big":1.2345678901234569e+23,"i":-7,"zeta":1.5}}`},
		{`{"l":[{"y":[{"d":1,"c":[]}],"x":null},3,"s",[{"b":{},"a":{}}]],"a":true}`, `{"a":true,"l":[{"x":null,"y":[{"c":[],"d":1}]},3,"s",[{"a":{},"b":{}}]]}`},
		// Names compare as decoded: "\u0062" is "b"; "é" (0xc3...) after "z".
		{`{"z":1,"\u0062":2,"é":3,"a":4}`, `{"a":4,"b":2,"z":1,"é":3}`},
		{`{"s":"b\"}{,[","a":"<&>"}`, `{"a":"\u003c\u0026\u003e","s":"b\"}{,["}`},
		// Not JSON: as it is.
		{`{"b":1,"a":}`, `{"b":1,"a":}`},
	} {
		if got := string(keyOrdered([]byte(tc.in))); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestCustomResourceKeysInOrder: a custom resource is stored as kube
// stores it, encoding/json of its map, so its answers, GETs (through
// either version), lists and watch events have every object's keys in
// order (but metadata.resourceVersion, which serve writes first in
// metadata, README), whatever order a create, update, patch or delete
// wrote them in; a member whose name sorts before apiVersion does not
// hide the version a read relabels the object to.
func TestCustomResourceKeysInOrder(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1", "v1beta1"))
	col := "/apis/example.com/v1/namespaces/default/widgets"
	inOrder := func(what string, b []byte) {
		t.Helper()
		// Every key in order, metadata.resourceVersion too.
		b = bytes.TrimSpace(b)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v: %s", what, err, b)
		}
		sorted, _ := json.Marshal(v) // encoding/json sorts a map's keys
		if !bytes.Equal(sorted, b) {
			t.Errorf("%s: keys not in order:\n got:  %s\n want: %s", what, b, sorted)
		}
	}
	created := e.do("POST", col, `{"kind":"Widget","apiVersion":"example.com/v1","spec":{"zeta":1,"color":"red","Alpha":{"b":[{"y":1,"x":2}],"a":true}},"metadata":{"name":"w","labels":{"z":"1","a":"2"},"finalizers":["example.com/x"]},"Upper":"x"}`)
	if created.code != 201 {
		t.Fatalf("create: %d %s", created.code, created.body)
	}
	inOrder("create", created.body)
	rv := path(created.json(t), "metadata", "resourceVersion").(string)
	inOrder("get", e.do("GET", col+"/w", nil).body)
	beta := e.do("GET", strings.Replace(col, "/v1/", "/v1beta1/", 1)+"/w", nil)
	inOrder("get v1beta1", beta.body)
	if path(beta.json(t), "apiVersion") != "example.com/v1beta1" {
		t.Errorf("get v1beta1: %s", beta.body)
	}
	inOrder("dry-run create", e.do("POST", col+"?dryRun=All", `{"spec":{"b":1,"a":2},"metadata":{"name":"d"},"kind":"Widget","apiVersion":"example.com/v1"}`).body)
	up := e.do("PUT", col+"/w", `{"metadata":{"resourceVersion":"`+rv+`","name":"w","finalizers":["example.com/x"]},"kind":"Widget","apiVersion":"example.com/v1","spec":{"y":{"q":1,"p":2},"color":"blue"}}`)
	if up.code != 200 {
		t.Fatalf("update: %d %s", up.code, up.body)
	}
	inOrder("update", up.body)
	inOrder("merge patch", e.do("PATCH", col+"/w", `{"spec":{"n":{"k":1,"j":2}}}`, "Content-Type", "application/merge-patch+json").body)
	inOrder("delete (finalizer)", e.do("DELETE", col+"/w", nil).body)
	inOrder("get after delete", e.do("GET", col+"/w", nil).body)
	list := e.do("GET", col, nil)
	var l struct{ Items []json.RawMessage }
	if err := json.Unmarshal(list.body, &l); err != nil || len(l.Items) != 1 {
		t.Fatalf("list: %s", list.body)
	}
	inOrder("list item", l.Items[0])
	// The list too, as kube encodes an unstructured list.
	inOrder("list", list.body)
	inOrder("empty list", e.do("GET", col+"?labelSelector=none", nil).body)
	watch := e.do("GET", col+"?watch=1&timeoutSeconds=1&resourceVersion="+rv, nil)
	n := 0
	for line := range bytes.Lines(watch.body) {
		var ev struct{ Object json.RawMessage }
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("watch: %s", watch.body)
		}
		inOrder("watch event", ev.Object)
		n++
	}
	if n != 3 {
		t.Errorf("watch: %d events: %s", n, watch.body)
	}
}

// TestCustomResourcePartialMetadataInKubeOrder: a custom resource asked
// for as PartialObjectMetadata (a GET, a list's items, a watch's events,
// a Table's rows) is kube's typed PartialObjectMetadata: ObjectMeta's
// members, and its managedFields' and ownerReferences', in their Go
// order, not the key order the resource is stored in.
func TestCustomResourcePartialMetadataInKubeOrder(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1", "v1beta1"))
	col := "/apis/example.com/v1/namespaces/default/widgets"
	created := e.do("POST", col, `{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","generateName":"g-","labels":{"z":"1","a":"2"},"annotations":{"n":"v"},"finalizers":["example.com/x"],`+
		`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"7f1b2c3d-0000-4000-8000-000000000001","controller":true,"blockOwnerDeletion":false}]},"spec":{"b":1}}`)
	if created.code != 201 {
		t.Fatalf("create: %d %s", created.code, created.body)
	}
	rv := path(created.json(t), "metadata", "resourceVersion").(string)
	// typed is what kube's typed encoder writes of what b decodes to.
	typed := func(what string, b []byte, obj any) {
		t.Helper()
		b = bytes.TrimSpace(b)
		if err := json.Unmarshal(b, obj); err != nil {
			t.Fatalf("%s: %v: %s", what, err, b)
		}
		want, _ := json.Marshal(obj)
		if !bytes.Equal(b, want) {
			t.Errorf("%s: not kube's order:\n got:  %s\n want: %s", what, b, want)
		}
	}
	const partial = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
	typed("get", e.must200(t, col+"/w", partial), &metav1.PartialObjectMetadata{})
	typed("list", e.must200(t, col, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"), &metav1.PartialObjectMetadataList{})
	typed("v1beta1 list", e.must200(t, col, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"), &metav1.PartialObjectMetadataList{})
	var tbl struct {
		Rows []struct{ Object json.RawMessage }
	}
	if err := json.Unmarshal(e.must200(t, col+"?includeObject=Metadata", "application/json;as=Table;g=meta.k8s.io;v=v1"), &tbl); err != nil || len(tbl.Rows) != 1 {
		t.Fatalf("table: %v %v", err, tbl)
	}
	typed("table row", tbl.Rows[0].Object, &metav1.PartialObjectMetadata{})
	e.must(200, "PATCH", col+"/w", `{"metadata":{"labels":{"m":"1"}}}`, "Content-Type", "application/merge-patch+json")
	watch := e.must200(t, col+"?watch=1&timeoutSeconds=1&resourceVersion="+rv, partial)
	n := 0
	for line := range bytes.Lines(watch) {
		var ev struct{ Object json.RawMessage }
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("watch: %s", watch)
		}
		typed("watch event", ev.Object, &metav1.PartialObjectMetadata{})
		n++
	}
	if n != 1 {
		t.Errorf("watch: %d events: %s", n, watch)
	}
}

// must200 GETs p with Accept accept and returns the body of its 200.
func (e *env) must200(t *testing.T, p, accept string) []byte {
	t.Helper()
	r := e.do("GET", p, nil, "Accept", accept)
	if r.code != 200 {
		t.Fatalf("GET %s: %d %s", p, r.code, r.body)
	}
	return r.body
}
