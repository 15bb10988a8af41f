package informer_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

// expireAndChange ends every watch, makes the next watch fail with 410
// (so the informer relists) and changes name while no watch can see it:
// only the relist tells the informer.
func (s *fakeServer) expireAndChange(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchErrs = append(s.watchErrs, gone())
	for w := range s.watchers {
		w.end(io.EOF)
		delete(s.watchers, w)
	}
	key := object.NewKey(ns, name)
	obj := s.objs[key].DeepCopy()
	obj.SetLabels(map[string]string{"changed": "true"})
	s.writeLocked("MODIFIED", obj)
}

// TestRelistReusesUnchangedObjects: after a relist, an object the list
// shows unchanged (same UID and resourceVersion) is the very one the
// store held, not transformed again; a changed one is the listed one,
// transformed. Paged and streaming lists alike.
func TestRelistReusesUnchangedObjects(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			srv := newFakeServer()
			seed(srv, 7)
			var transforms atomic.Int64
			inf, err := informer.New[U](srv, informer.Options[U]{
				Reflector: fastOpts(streaming, 3),
				Transform: func(u U) (U, error) { transforms.Add(1); return u, nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- inf.Run(ctx) }()
			defer func() { cancel(); <-done }()
			waitCond(t, inf.HasSynced, "sync")
			before := map[string]U{}
			for _, o := range inf.Lister().List() {
				before[object.Key(o)] = o
			}
			if got := transforms.Load(); got != 7 {
				t.Fatalf("transforms after sync = %d, want 7", got)
			}

			srv.expireAndChange("ns", "o03")
			waitCond(t, func() bool {
				o, ok := inf.Lister().Get("ns", "o03")
				return ok && o.GetLabels()["changed"] == "true"
			}, "the relist's change")

			for k, old := range before {
				now, ok := inf.Lister().GetByKey(k)
				switch {
				case !ok:
					t.Errorf("%s missing after relist", k)
				case k == "ns/o03" && now == old:
					t.Errorf("%s changed but still the old object", k)
				case k != "ns/o03" && now != old:
					t.Errorf("%s unchanged but replaced by another copy (rv %s -> %s)", k, old.GetResourceVersion(), now.GetResourceVersion())
				}
			}
			if got := transforms.Load(); got != 8 {
				t.Errorf("transforms after relist = %d, want 8 (only the changed object again)", got)
			}
		})
	}
}

// waitCond polls a real condition, with a deadline.
func waitCond(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
