package controllers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/controllers"
	"github.com/listwatch/listwatch/wire"
)

// TestNamespaceWaitsForFinalizers: content that outlives its deletion
// (objects held by finalizers, simulated here by a transport that
// swallows the controller's deletes of widgets) keeps the namespace
// Terminating with kube's NamespaceContentRemaining and
// NamespaceFinalizersRemaining conditions; the controller looks again
// after FinalizerWait and finalizes once the content is gone.
func TestNamespaceWaitsForFinalizers(t *testing.T) {
	s, admin := bare(t)
	mustCreate(t, res(admin, crdGVR), widgetCRD())
	mustCreate(t, res(admin, nsGVR), obj("v1", "Namespace", "held", nil))
	ws := res(admin, wGVR).Namespace("held")
	for i := range 2 {
		mustCreate(t, ws, withMeta(obj("example.com/v1", "Widget", fmt.Sprint("w", i), nil),
			map[string]any{"finalizers": []any{"example.com/hold"}}))
	}
	mustCreate(t, res(admin, cmGVR).Namespace("held"), obj("v1", "ConfigMap", "c", nil))

	var hold atomic.Bool
	hold.Store(true)
	c := newClient(t, s, s.URL(), func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if !hold.Load() || r.Method != "DELETE" || !strings.Contains(r.URL.Path, "/widgets") {
				return next.RoundTrip(r)
			}
			return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
				Header: http.Header{"Content-Type": {"application/json"}},
				Body:   io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))}, nil
		})
	})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w, err := res(admin, nsGVR).Watch(ctx, wire.ListOptions{FieldSelector: "metadata.name=held"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	runHost(t, c, controllers.Config{Controllers: []string{"namespace"}, FinalizerWait: 100 * time.Millisecond})
	if _, err := res(admin, nsGVR).Delete(t.Context(), "held", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"NamespaceContentRemaining":    "True SomeResourcesRemain Some resources are remaining: widgets.example.com has 2 resource instances",
		"NamespaceFinalizersRemaining": "True SomeFinalizersRemain Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances",
	}
	for released := false; ; {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("watch: %v (released %v)", err, released)
		}
		if ev.Type == wire.Deleted {
			if !released {
				t.Fatal("namespace went while its content was held")
			}
			break
		}
		list, _ := ev.Object.Nested("status", "conditions")
		conds, _ := list.([]any)
		got := map[string]string{}
		for _, c := range conds {
			m := c.(map[string]any)
			got[m["type"].(string)] = fmt.Sprint(m["status"], " ", m["reason"], " ", m["message"])
		}
		if !released && got["NamespaceContentRemaining"] == want["NamespaceContentRemaining"] {
			if got["NamespaceFinalizersRemaining"] != want["NamespaceFinalizersRemaining"] {
				t.Fatalf("NamespaceFinalizersRemaining: %q", got["NamespaceFinalizersRemaining"])
			}
			if n := countIn(t, admin, cmGVR, "held"); n != 0 {
				t.Fatalf("%d configmaps left beside the held widgets", n)
			}
			hold.Store(false)  // the finalizers are done: the widgets' owner
			for i := range 2 { // removes them, and the controller's next delete takes them
				if _, err := ws.Patch(t.Context(), fmt.Sprint("w", i), client.MergePatch, []byte(`{"metadata":{"finalizers":null}}`)); err != nil {
					t.Fatal(err)
				}
			}
			released = true
		}
	}
}
