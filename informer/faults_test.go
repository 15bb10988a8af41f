package informer_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/wire"
)

func seed(srv *fakeServer, n int) {
	for i := range n {
		srv.upsert("ns", fmt.Sprintf("o%02d", i), map[string]string{"app": strconv.Itoa(i % 3)})
	}
}

func TestFaults(t *testing.T) {
	cases := []struct {
		name   string
		before func(*fakeServer) // faults armed before Run
		during func(*fakeServer) // faults after the first sync
		check  func(*testing.T, *harness)
	}{
		{name: "watch dropped mid-stream", during: func(s *fakeServer) {
			s.upsert("ns", "o01", nil)
			s.endWatches(io.EOF)
			s.upsert("ns", "o02", nil)
			s.endWatches(syscall.ECONNRESET)
			s.remove("ns", "o03")
		}},
		{name: "410 on list", before: func(s *fakeServer) {
			s.listErrs = []error{gone(), gone()}
		}},
		{name: "410 on watch start", during: func(s *fakeServer) {
			s.watchErrs = []error{gone()}
			s.endWatches(io.EOF)
			s.upsert("ns", "o04", nil)
		}},
		{name: "410 as ERROR event", during: func(s *fakeServer) {
			s.upsert("ns", "o05", nil)
			s.endWatches(gone())
			s.remove("ns", "o06")
		}},
		{name: "410 on a continue token", before: func(s *fakeServer) {
			s.expireNextContinue = 1
		}, check: func(t *testing.T, h *harness) {
			if h.srv.streamCalls == 0 && h.srv.listCalls < 2 {
				t.Errorf("list calls = %d, want a full-list fallback", h.srv.listCalls)
			}
		}},
		{name: "duplicates and out-of-order around bookmarks", during: func(s *fakeServer) {
			s.upsert("ns", "o07", nil)
			s.bookmark("")
			s.bookmark("3") // older than everything seen: must be ignored
			s.replayOnWatch = 5
			s.endWatches(io.EOF)
			s.upsert("ns", "o08", nil)
		}},
		{name: "server restart", during: func(s *fakeServer) {
			s.setDown(true)
			s.endWatches(io.EOF)
			s.upsert("ns", "o09", nil)
			s.remove("ns", "o00")
			s.compact() // the restarted server lost the history
			s.setDown(false)
		}, check: func(t *testing.T, h *harness) {
			if h.rec.unknown == 0 {
				t.Errorf("no delete with final state unknown after a restart that lost a delete: deletes=%d calls list=%d watch=%d stream=%d", h.rec.deletes, h.srv.listCalls, h.srv.watchCalls, h.srv.streamCalls)
			}
		}},
		{name: "deleted and re-created while the watch is down", during: func(s *fakeServer) {
			s.setDown(true)
			s.endWatches(syscall.ECONNRESET)
			s.remove("ns", "o02")
			s.upsert("ns", "o02", map[string]string{"new": "uid"})
			s.compact()
			s.setDown(false)
		}},
		{name: "streaming list refused falls back to LIST", before: func(s *fakeServer) {
			s.streaming = "refuse"
		}, check: func(t *testing.T, h *harness) {
			if h.srv.listCalls == 0 {
				t.Error("no LIST after the streaming list was refused")
			}
		}},
		{name: "streaming list without end bookmark falls back to LIST", before: func(s *fakeServer) {
			s.streaming = "ignore"
		}, during: func(s *fakeServer) {
			// A restart that loses the history forces a relist.
			s.setDown(true)
			s.endWatches(io.EOF)
			s.upsert("ns", "o01", nil)
			s.compact()
			s.setDown(false)
		}, check: func(t *testing.T, h *harness) {
			// Each sync lists; each relist tries streaming again first.
			if h.srv.streamCalls < 2 || h.srv.listCalls < 2 {
				t.Errorf("streaming attempts = %d, lists = %d: want a streaming attempt and a LIST per sync", h.srv.streamCalls, h.srv.listCalls)
			}
		}},
	}
	for _, tc := range cases {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streaming=%v", tc.name, streaming), func(t *testing.T) {
				srv := newFakeServer()
				seed(srv, 12)
				if tc.before != nil {
					tc.before(srv)
				}
				h := startHarness(t, srv, fastOpts(streaming || tc.before != nil && srv.streaming != "ok", 5))
				h.mustConverge()
				if tc.during != nil {
					tc.during(srv)
					h.mustConverge()
				}
				if tc.check != nil {
					tc.check(t, h)
				}
			})
		}
	}
}

func TestLastSyncErrorForbidden(t *testing.T) {
	srv := newFakeServer()
	forbidden := wire.NewForbidden(wire.GroupResource{Resource: "configmaps"}, "", `User "bob" cannot list`)
	srv.listErrs = []error{forbidden, forbidden, forbidden}
	h := startHarness(t, srv, fastOpts(false, 5))
	h.mustConverge()
	if srv.listCalls < 4 {
		t.Errorf("list calls = %d, want retries", srv.listCalls)
	}
	if err := h.inf.LastSyncError(); err != nil {
		t.Errorf("LastSyncError after recovery = %v, want nil", err)
	}
}

func TestLastSyncErrorReported(t *testing.T) {
	srv := newFakeServer()
	forbidden := wire.NewForbidden(wire.GroupResource{Resource: "configmaps"}, "", "no")
	srv.listErrs = make([]error, 1<<20)
	for i := range srv.listErrs {
		srv.listErrs[i] = forbidden
	}
	h := startHarness(t, srv, fastOpts(false, 5))
	deadline := time.Now().Add(5 * time.Second)
	for h.inf.LastSyncError() == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling a real condition, with a deadline
	}
	if err := h.inf.LastSyncError(); wire.CodeOf(err) != 403 {
		t.Fatalf("LastSyncError = %v, want the 403", err)
	}
	if h.inf.HasSynced() || h.reg.HasSynced() {
		t.Fatal("HasSynced with no successful list")
	}
}

// TestListPageWithNilObject: a ListerWatcher whose page holds a nil
// object fails that list (LastSyncError says why) instead of panicking
// the informer; the next list syncs.
func TestListPageWithNilObject(t *testing.T) {
	srv := newFakeServer()
	srv.upsert("ns", "a", nil)
	calls := 0
	var firstErr error
	var inf *informer.Informer[U]
	lw := informer.ListWatchFuncs[U]{
		ListFunc: func(ctx context.Context, o wire.ListOptions) (*wire.List[U], error) {
			calls++
			if calls == 1 {
				return &wire.List[U]{Items: []U{nil}, Metadata: wire.ListMeta{ResourceVersion: "1"}}, nil
			}
			if calls == 2 {
				firstErr = inf.LastSyncError()
			}
			return srv.List(ctx, o)
		},
		WatchFunc: srv.Watch,
	}
	var err error
	inf, err = informer.New[U](lw, informer.Options[U]{Reflector: fastOpts(false, 0)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = inf.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// A bound, so that a list that never recovers fails the test rather
	// than hanging it.
	wait, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if !informer.WaitForCacheSync(wait, inf.HasSynced) {
		t.Fatalf("never synced: %v", inf.LastSyncError())
	}
	if firstErr == nil || !strings.Contains(firstErr.Error(), "nil object") {
		t.Fatalf("LastSyncError after the bad page = %v", firstErr)
	}
	if _, ok := inf.Lister().GetByKey("ns/a"); !ok {
		t.Fatal("ns/a not stored after the second list")
	}
}
