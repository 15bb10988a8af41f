package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// seedConfigMaps creates n configmaps in ns directly in the fake.
func seedConfigMaps(t *testing.T, cms *Resource[*object.Unstructured], n int) {
	t.Helper()
	for i := range n {
		if _, err := cms.Create(ctxT(t), newConfigMap("", fmt.Sprintf("cm-%02d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
}

func listRequests(api *fakeAPI) []seenRequest {
	var out []seenRequest
	for _, r := range api.seen() {
		if r.method == "GET" {
			out = append(out, r)
		}
	}
	return out
}

func TestListAllPagesThreeTimes(t *testing.T) {
	api := newFakeAPI()
	srv := startTLS(t, api)
	c := newTestClient(t, srv, nil)
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	seedConfigMaps(t, cms, 7)

	list, err := cms.ListAll(ctxT(t), wire.ListOptions{Limit: 3, ResourceVersion: "0", ResourceVersionMatch: wire.MatchNotOlderThan, LabelSelector: ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 7 || list.Metadata.Continue != "" || list.Metadata.RemainingItemCount != nil {
		t.Fatalf("list: %d items, meta %+v", len(list.Items), list.Metadata)
	}
	for i, it := range list.Items {
		if it.GetName() != fmt.Sprintf("cm-%02d", i) {
			t.Fatalf("item %d is %s", i, it.GetName())
		}
	}
	reqs := listRequests(api)
	if len(reqs) != 3 {
		t.Fatalf("%d list requests, want 3", len(reqs))
	}
	if reqs[0].query.Get("resourceVersion") != "0" || reqs[0].query.Has("continue") || reqs[0].query.Get("limit") != "3" {
		t.Errorf("first page query %v", reqs[0].query)
	}
	for _, r := range reqs[1:] {
		// A continue request must not carry resourceVersion(Match).
		if !r.query.Has("continue") || r.query.Has("resourceVersion") || r.query.Has("resourceVersionMatch") || r.query.Get("limit") != "3" {
			t.Errorf("continue page query %v", r.query)
		}
	}
}

func TestListAllDefaultLimit(t *testing.T) {
	api := newFakeAPI()
	srv := startTLS(t, api)
	c := newTestClient(t, srv, nil)
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	if _, err := cms.ListAll(ctxT(t), wire.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := listRequests(api)[0].query.Get("limit"); got != "500" {
		t.Fatalf("limit %q, want 500", got)
	}
}

func TestListAllFallsBackToFullListOnExpiredContinue(t *testing.T) {
	t.Run("Expired", func(t *testing.T) { testListAllFallback(t, false) })
	// A 410 with reason Gone means the same: the snapshot is gone.
	t.Run("Gone", func(t *testing.T) { testListAllFallback(t, true) })
}

func testListAllFallback(t *testing.T, gone bool) {
	api := newFakeAPI()
	srv := startTLS(t, api)
	c := newTestClient(t, srv, nil)
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	seedConfigMaps(t, cms, 5)
	api.mu.Lock()
	api.expireContinue, api.continueGone = true, gone
	api.mu.Unlock()

	list, err := cms.ListAll(ctxT(t), wire.ListOptions{Limit: 2, ResourceVersion: "0", LabelSelector: ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 5 {
		t.Fatalf("%d items, want all 5 (no duplicates from the first page)", len(list.Items))
	}
	reqs := listRequests(api)
	if len(reqs) != 3 {
		t.Fatalf("%d list requests, want page, expired continue, full list", len(reqs))
	}
	full := reqs[2].query
	if full.Has("limit") || full.Has("continue") || full.Has("resourceVersion") {
		t.Fatalf("fallback query %v, want no limit, continue or resourceVersion", full)
	}
}

func TestListEachStreamsPages(t *testing.T) {
	api := newFakeAPI()
	srv := startTLS(t, api)
	c := newTestClient(t, srv, nil)
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	seedConfigMaps(t, cms, 5)

	var names []string
	rv, err := cms.ListEach(ctxT(t), wire.ListOptions{Limit: 2}, func(u *object.Unstructured) error {
		names = append(names, u.GetName())
		return nil
	}, nil)
	if err != nil || len(names) != 5 || rv == "" {
		t.Fatalf("ListEach: %v names=%v rv=%q", err, names, rv)
	}
	if n := len(listRequests(api)); n != 3 {
		t.Fatalf("%d requests, want 3 pages", n)
	}

	stop := errors.New("stop")
	count := 0
	_, err = cms.ListEach(ctxT(t), wire.ListOptions{Limit: 2}, func(*object.Unstructured) error {
		count++
		if count == 3 {
			return stop
		}
		return nil
	}, nil)
	if !errors.Is(err, stop) || count != 3 {
		t.Fatalf("ListEach with failing fn: %v after %d", err, count)
	}

	api.mu.Lock()
	api.expireContinue = true
	api.mu.Unlock()
	_, err = cms.ListEach(ctxT(t), wire.ListOptions{Limit: 2}, func(*object.Unstructured) error { return nil }, nil)
	if !IsExpired(err) {
		t.Fatalf("ListEach with expired token and no restart: %v, want Expired", err)
	}
}

// TestListEachRestartsOnExpiredToken: an expired continue token makes
// ListEach call restart, then deliver a full list from its start, so a
// caller that resets on restart ends with each object exactly once.
func TestListEachRestartsOnExpiredToken(t *testing.T) {
	api := newFakeAPI()
	srv := startTLS(t, api)
	c := newTestClient(t, srv, nil)
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	seedConfigMaps(t, cms, 5)
	api.mu.Lock()
	api.expireContinue = true
	api.mu.Unlock()

	seen := map[string]int{}
	restarts := 0
	rv, err := cms.ListEach(ctxT(t), wire.ListOptions{Limit: 2}, func(u *object.Unstructured) error {
		seen[u.GetName()]++
		return nil
	}, func() error {
		restarts++
		clear(seen)
		return nil
	})
	if err != nil || rv == "" {
		t.Fatalf("ListEach: %v, rv %q", err, rv)
	}
	if restarts != 1 || len(seen) != 5 {
		t.Fatalf("restarts %d, seen %v: want 1 restart and 5 objects", restarts, seen)
	}
	for name, n := range seen {
		if n != 1 {
			t.Fatalf("%s delivered %d times after the restart", name, n)
		}
	}
	reqs := listRequests(api)
	if full := reqs[len(reqs)-1].query; full.Has("limit") || full.Has("continue") {
		t.Fatalf("fallback query %v, want a full list", full)
	}

	stop := errors.New("stop")
	api.mu.Lock()
	api.expireContinue = true
	api.mu.Unlock()
	_, err = cms.ListEach(ctxT(t), wire.ListOptions{Limit: 2}, func(*object.Unstructured) error { return nil },
		func() error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("ListEach with failing restart: %v, want its error", err)
	}
}
