package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
