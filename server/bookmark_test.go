package server

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcd"
)

// TestDirectReaderBookmarks: with the direct reader (--disable-watch-cache)
// an allowWatchBookmarks watch gets a BOOKMARK that covers a write to
// another resource. etcd's own periodic progress is an hour away here, so
// only the reader's Run, asking for progress through the store, can cause
// it.
func TestDirectReaderBookmarks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	emb, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: t.TempDir(), ProgressNotifyInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	store := etcd.New(emb.Client())
	reader := direct.New(store, direct.WithBookmarkInterval(50*time.Millisecond))
	var wg sync.WaitGroup
	wg.Go(func() { _ = reader.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	e := startEnv(t, store, nil, func(c *Config) { c.Reader = reader })

	rv := path(e.must(200, "GET", cmPath, nil), "metadata", "resourceVersion").(string)
	w := e.watch(cmPath + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv)
	sec := e.must(201, "POST", "/api/v1/namespaces/default/secrets", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}})
	want, _ := strconv.ParseInt(path(sec, "metadata", "resourceVersion").(string), 10, 64)
	// A deadline on the wait, not a synchronisation: close the stream if
	// no bookmark came in time.
	deadline := time.AfterFunc(20*time.Second, w.close)
	defer deadline.Stop()
	for {
		ev, ok := w.next()
		if !ok {
			t.Fatalf("no bookmark at >= %d before the deadline", want)
		}
		if ev.Type != "BOOKMARK" || ev.Object["kind"] != "ConfigMap" {
			t.Fatalf("event %s %v, want only bookmarks", ev.Type, ev.Object)
		}
		got, _ := strconv.ParseInt(path(ev.Object, "metadata", "resourceVersion").(string), 10, 64)
		if got >= want {
			return
		}
	}
}
