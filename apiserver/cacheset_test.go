package apiserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/direct"
	"github.com/listwatch/listwatch/storage/etcdtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	)
}

// TestCacheSetLifecycle: caches are created only while Run runs (none is
// left unstarted before or after), as many resources as are asked for
// get one (no start queue to overflow), and Run returns after every
// cache's Run has.
func TestCacheSetLifecycle(t *testing.T) {
	et := etcdtest.Start(t)
	s := newCacheSet(et.Store, direct.New(et.Store), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ctx := context.Background()
	if _, err := s.GetList(ctx, "/registry/configmaps/", storage.GetListOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := s.count(); n != 0 {
		t.Fatalf("%d caches created before Run", n)
	}

	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	const resources = 100
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		ready := 0
		var wg sync.WaitGroup
		for r := range resources {
			wg.Go(func() {
				if s.get(fmt.Sprintf("/registry/r%d/", r)) != nil {
					s.mu.Lock()
					ready++
					s.mu.Unlock()
				}
			})
		}
		wg.Wait()
		if ready == resources {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d caches ready (%d created)", ready, resources, s.count())
		}
		time.Sleep(10 * time.Millisecond) // polling a real condition, with a deadline
	}
	if n := s.count(); n != resources {
		t.Fatalf("%d caches for %d resources", n, resources)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := s.get("/registry/late/"); c != nil || s.count() != resources {
		t.Fatalf("a read after Run returned made a cache (%d caches)", s.count())
	}
	if c := s.get("/registry/r1/"); c != nil {
		t.Fatal("a stopped cache still serves")
	}
}

func (s *cacheSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.caches)
}
