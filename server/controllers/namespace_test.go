package controllers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/controllers"
	"github.com/listwatch/listwatch/wire"
)

// fill creates n objects of each kind in ns, with a few goroutines.
func fill(t *testing.T, c *client.Client, ns string, n int) {
	t.Helper()
	kinds := []struct {
		r    *client.Resource[u]
		make func(string) u
	}{
		{res(c, cmGVR).Namespace(ns), func(name string) u {
			return obj("v1", "ConfigMap", name, map[string]any{"data": map[string]any{"k": "v"}})
		}},
		{res(c, secGVR).Namespace(ns), func(name string) u { return obj("v1", "Secret", name, map[string]any{"type": "Opaque"}) }},
		{res(c, wGVR).Namespace(ns), func(name string) u { return obj("example.com/v1", "Widget", name, nil) }},
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(kinds)*4)
	for _, k := range kinds {
		for w := range 4 {
			wg.Go(func() {
				for i := w; i < n; i += 4 {
					if _, err := k.r.Create(t.Context(), k.make(fmt.Sprintf("o-%04d", i))); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func countIn(t *testing.T, c *client.Client, gvr client.GroupVersionResource, ns string) int {
	t.Helper()
	l, err := res(c, gvr).Namespace(ns).ListAll(t.Context(), wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// TestNamespaceController: a deleted namespace is emptied of every
// namespaced resource, custom ones included, finalized and gone; other
// namespaces keep theirs. The controller's client goes through a proxy
// that drops connections and fails one request in 400 (a pass makes
// some two requests per served namespaced resource, about 60 now, and
// must succeed whole to finalize).
func TestNamespaceController(t *testing.T) {
	s, admin := bare(t)
	mustCreate(t, res(admin, crdGVR), widgetCRD())
	waitFor(t, res(admin, crdGVR), "widgets.example.com", func(o u) bool {
		conds, _ := o.Nested("status", "conditions")
		return fmt.Sprint(conds) != "<nil>" && slices.ContainsFunc(conds.([]any), func(c any) bool {
			m := c.(map[string]any)
			return m["type"] == "Established" && m["status"] == "True"
		})
	})
	for _, ns := range []string{"doomed", "kept"} {
		mustCreate(t, res(admin, nsGVR), obj("v1", "Namespace", ns, nil))
		fill(t, admin, ns, 20)
	}
	runHost(t, faulty(t, s, 0.001, 400), controllers.Config{Controllers: []string{controllers.NamespaceController}})

	if _, err := res(admin, nsGVR).Delete(t.Context(), "doomed", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, res(admin, nsGVR), "doomed")
	if _, err := res(admin, nsGVR).Get(t.Context(), "doomed"); !client.IsNotFound(err) {
		t.Fatalf("namespace after its DELETED event: %v", err)
	}
	for _, gvr := range []client.GroupVersionResource{cmGVR, secGVR, wGVR} {
		if n := countIn(t, admin, gvr, "doomed"); n != 0 {
			t.Errorf("%s: %d left in the deleted namespace", gvr, n)
		}
		if n := countIn(t, admin, gvr, "kept"); n != 20 {
			t.Errorf("%s: %d in the other namespace, want 20", gvr, n)
		}
	}
}

// TestNamespaceDeletesCollectionsInBackground: the controller's delete
// collection requests ask for background propagation, as kube's
// namespace controller does (so that the garbage collector adds no
// orphan finalizer to what it deletes).
func TestNamespaceDeletesCollectionsInBackground(t *testing.T) {
	s, admin := bare(t)
	mustCreate(t, res(admin, nsGVR), obj("v1", "Namespace", "bg", nil))
	mustCreate(t, res(admin, cmGVR).Namespace("bg"), obj("v1", "ConfigMap", "c", nil))
	var mu sync.Mutex
	var bodies []string
	c := newClient(t, s, s.URL(), func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/namespaces/bg/configmaps") {
				b, err := io.ReadAll(r.Body)
				if err != nil {
					return nil, err
				}
				r.Body = io.NopCloser(bytes.NewReader(b))
				mu.Lock()
				bodies = append(bodies, string(b))
				mu.Unlock()
			}
			return next.RoundTrip(r)
		})
	})
	runHost(t, c, controllers.Config{Controllers: []string{controllers.NamespaceController}})
	if _, err := res(admin, nsGVR).Delete(t.Context(), "bg", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, res(admin, nsGVR), "bg")
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) == 0 {
		t.Fatal("no delete collection of configmaps")
	}
	for _, b := range bodies {
		var opts wire.DeleteOptions
		if err := json.Unmarshal([]byte(b), &opts); err != nil || opts.PropagationPolicy == nil || *opts.PropagationPolicy != "Background" {
			t.Fatalf("delete collection body %s (%v): want propagationPolicy Background", b, err)
		}
	}
}

// TestNamespaceConditions: a pass whose discovery is partial records
// NamespaceDeletionDiscoveryFailure (True, kube's reason) and finalizes
// nothing; the next pass, complete, sets every condition False with
// kube's reasons and the namespace goes.
func TestNamespaceConditions(t *testing.T) {
	s, admin := bare(t)
	mustCreate(t, res(admin, crdGVR), widgetCRD())
	mustCreate(t, res(admin, nsGVR), obj("v1", "Namespace", "cond", nil))
	fill(t, admin, "cond", 3)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w, err := res(admin, nsGVR).Watch(ctx, wire.ListOptions{FieldSelector: "metadata.name=cond"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The first discovery of example.com/v1 fails. The client is made to
	// read the legacy per-group documents (it would read the aggregated
	// one, which holds every group, first), so one group can fail alone.
	var once sync.Once
	c := newClient(t, s, s.URL(), wrapFunc(func(r *http.Request) bool {
		if r.URL.Path == "/api" || r.URL.Path == "/apis" {
			r.Header.Set("Accept", "application/json")
		}
		fail := false
		if r.URL.Path == "/apis/example.com/v1" {
			once.Do(func() { fail = true })
		}
		return fail
	}))
	runHost(t, c, controllers.Config{Controllers: []string{"namespace"}})
	if _, err := res(admin, nsGVR).Delete(t.Context(), "cond", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []map[string]string // condition type → "status reason" per event
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("watch: %v (seen %v)", err, seen)
		}
		if ev.Type == wire.Deleted {
			break
		}
		conds, _ := ev.Object.Nested("status", "conditions")
		list, _ := conds.([]any)
		m := map[string]string{}
		for _, c := range list {
			c := c.(map[string]any)
			m[c["type"].(string)] = fmt.Sprint(c["status"], " ", c["reason"])
		}
		if len(m) > 0 {
			seen = append(seen, m)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("conditions seen: %v", seen)
	}
	if got := seen[0]["NamespaceDeletionDiscoveryFailure"]; got != "True DiscoveryFailed" {
		t.Errorf("first pass: NamespaceDeletionDiscoveryFailure %q (all %v)", got, seen[0])
	}
	want := map[string]string{
		"NamespaceDeletionDiscoveryFailure":           "False ResourcesDiscovered",
		"NamespaceDeletionGroupVersionParsingFailure": "False ParsedGroupVersions",
		"NamespaceDeletionContentFailure":             "False ContentDeleted",
		"NamespaceContentRemaining":                   "False ContentRemoved",
		"NamespaceFinalizersRemaining":                "False ContentHasNoFinalizers",
	}
	if last := seen[len(seen)-1]; fmt.Sprint(last) != fmt.Sprint(want) {
		t.Errorf("last conditions: %v\nwant %v", last, want)
	}
}
