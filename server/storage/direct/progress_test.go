package direct_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
)

// progressStore counts progress requests; its watches never deliver.
type progressStore struct {
	storage.Interface // nil: only Watch and RequestProgress are used
	requests          atomic.Int64
}

func (s *progressStore) Watch(context.Context, string, int64, bool, ...storage.WatchOption) (storage.Watcher, error) {
	return idleWatcher{}, nil
}

func (s *progressStore) RequestProgress(context.Context) error {
	s.requests.Add(1)
	return nil
}

type idleWatcher struct{}

func (idleWatcher) Next(ctx context.Context) (storage.Event, error) {
	<-ctx.Done()
	return storage.Event{}, ctx.Err()
}
func (idleWatcher) Close() {}

// TestRunRequestsProgressForBookmarkWatches: Run asks for progress once
// per interval only while a watch that allows bookmarks is open, and a
// second Close does not stop it early.
func TestRunRequestsProgressForBookmarkWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &progressStore{}
		r := direct.New(st, direct.WithBookmarkInterval(time.Second))
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = r.Run(ctx) })
		defer func() { cancel(); wg.Wait() }()

		plain, err := r.WatchList(ctx, prefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: 5})
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		time.Sleep(3500 * time.Millisecond) // fake time
		if n := st.requests.Load(); n != 0 {
			t.Fatalf("%d progress requests without bookmark watches", n)
		}
		a, _ := r.WatchList(ctx, prefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: 5, AllowBookmarks: true})
		b, _ := r.WatchList(ctx, prefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: 5, AllowBookmarks: true})
		time.Sleep(3 * time.Second)
		if n := st.requests.Load(); n != 3 {
			t.Fatalf("%d progress requests in 3 intervals, want 3 (one per interval, not per watch)", n)
		}
		a.Close()
		a.Close()
		time.Sleep(time.Second)
		if n := st.requests.Load(); n != 4 {
			t.Fatalf("%d progress requests with one bookmark watch left, want 4", n)
		}
		b.Close()
		time.Sleep(3 * time.Second)
		if n := st.requests.Load(); n != 4 {
			t.Fatalf("%d progress requests after the last bookmark watch closed, want 4", n)
		}
	})
}
