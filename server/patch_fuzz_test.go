package server

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/wire"
)

// fuzzCall is a call on the stored object named "o" of the built-in
// resource plural (a PATCH, so admit treats it as one).
func fuzzCall(t *testing.T, plural, query string) *call {
	t.Helper()
	for _, r := range builtinResources() {
		if r.plural == plural {
			return &call{s: &Server{now: time.Now}, res: r, ns: "default", name: "o", w: httptest.NewRecorder(),
				r: httptest.NewRequest("PATCH", "/x?"+query, nil)}
		}
	}
	t.Fatalf("no resource %s", plural)
	return nil
}

var fuzzStored = map[string]string{
	"configmaps":  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"o","namespace":"default","uid":"u1","resourceVersion":"5","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"a":"b"}},"data":{"k":"v"}}`,
	"deployments": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"o","namespace":"default","uid":"u2","resourceVersion":"5","generation":1,"creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"o"}},"template":{"metadata":{"labels":{"app":"o"}},"spec":{"containers":[{"name":"c","image":"nginx","env":[{"name":"A","value":"1"}]}]}}}}`,
}

// anyRevision is the settle of an admit whose resourceVersion is not in
// question.
func anyRevision(string) error { return nil }

// checkAdmitted: what admit let through encodes to an object that decodes
// again, laxly into the kind's Go type: nothing undecodable is stored.
func checkAdmitted(t *testing.T, c *call, next, cur *doc) {
	t.Helper()
	if err := c.checkType(next); err != nil {
		return
	}
	if err := c.admit(next, cur, anyRevision); err != nil {
		var st *wire.Status
		if !errors.As(err, &st) {
			t.Fatalf("admit: not a Status: %T %v", err, err)
		}
		return
	}
	stored, err := decodeDoc(next.encode())
	if err != nil {
		t.Fatalf("stored form does not decode: %v", err)
	}
	if _, err := c.res.typed().decodeStored(stored); err != nil {
		t.Fatalf("stored form does not decode into the Go type: %v\n%s", err, next.encode())
	}
}

// FuzzPatch: a random JSON, merge or strategic merge patch of a built-in
// object never panics, is refused with a Status, or gives an object that
// admission takes and that decodes again.
func FuzzPatch(f *testing.F) {
	f.Add(uint8(0), false, []byte(`[{"op":"add","path":"/data/x","value":"1"},{"op":"move","from":"/data/k","path":"/data/y"}]`))
	f.Add(uint8(1), false, []byte(`{"data":{"k":null,"n":"1"},"metadata":{"labels":null}}`))
	f.Add(uint8(2), true, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"c","$patch":"delete"},{"name":"d","image":"x"}]}}}}`))
	f.Add(uint8(2), true, []byte(`{"spec":{"$setElementOrder/x":[1],"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}`))
	f.Add(uint8(0), true, []byte(`[{"op":"copy","from":"/spec","path":"/spec/template/x"},{"op":"test","path":"/kind","value":"Deployment"}]`))
	f.Add(uint8(1), false, []byte(`{"kind":"Secret","metadata":{"name":null,"managedFields":[{}]}}`))
	f.Fuzz(func(t *testing.T, kind uint8, deployment bool, body []byte) {
		plural := "configmaps"
		if deployment {
			plural = "deployments"
		}
		ct := []string{contentJSONPatch, contentMergePatch, contentStrategicPatch}[int(kind)%3]
		c := fuzzCall(t, plural, "fieldValidation=Strict")
		cur, err := decodeDoc([]byte(fuzzStored[plural]))
		if err != nil {
			t.Fatal(err)
		}
		next, err := c.patchOnce(ct, body, cur)
		if err != nil {
			var st *wire.Status
			if !errors.As(err, &st) {
				t.Fatalf("not a Status: %T %v", err, err)
			}
			return
		}
		checkAdmitted(t, c, next, cur)
	})
}

// FuzzApply: a random server-side apply body, to an existing object or
// to none, never panics, is refused with a Status, or gives an object
// that admission takes and that decodes again.
func FuzzApply(f *testing.F) {
	f.Add(false, true, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: o\ndata:\n  k: w\n"))
	f.Add(true, false, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: o\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: x\n"))
	f.Add(false, true, []byte("apiVersion: v2\nkind: ConfigMap\n"))
	f.Add(true, true, []byte("a: [\n"))
	f.Add(false, false, []byte("- 1\n- 2\n"))
	f.Fuzz(func(t *testing.T, deployment, exists bool, body []byte) {
		plural := "configmaps"
		if deployment {
			plural = "deployments"
		}
		c := fuzzCall(t, plural, "fieldManager=fuzz")
		c.applied = true
		if err := applyBody(body); err != nil {
			return
		}
		var cur *doc
		if exists {
			var err error
			if cur, err = decodeDoc([]byte(fuzzStored[plural])); err != nil {
				t.Fatal(err)
			}
		}
		force := true
		next, err := c.applyPatch(&metav1.PatchOptions{FieldManager: "fuzz", Force: &force}, body, cur)
		if err != nil {
			var st *wire.Status
			if !errors.As(err, &st) {
				t.Fatalf("not a Status: %T %v", err, err)
			}
			return
		}
		checkAdmitted(t, c, next, cur)
	})
}
