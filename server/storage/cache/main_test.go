package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testPrefix = "/registry/configmaps/"

// running is a cache whose Run goroutine stops at test cleanup.
type running struct {
	*Cache
	store storage.Interface
}

func startCache(t testing.TB, store storage.Interface, cfg Config) *running {
	t.Helper()
	cfg.Store = store
	if cfg.Prefix == "" {
		cfg.Prefix = testPrefix
	}
	c := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return &running{Cache: c, store: store}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func key(ns, name string) string { return testPrefix + ns + "/" + name }

func value(ns, name string, labels map[string]string, data string) []byte {
	b, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels},
		"data":     map[string]string{"v": data},
	})
	if err != nil {
		panic(err)
	}
	return b
}

func mustCreate(t testing.TB, s storage.Interface, ns, name string, labels map[string]string) int64 {
	t.Helper()
	rev, err := s.Create(context.Background(), key(ns, name), value(ns, name, labels, "x"))
	if err != nil {
		t.Fatalf("create %s/%s: %v", ns, name, err)
	}
	return rev
}

func mustUpdate(t testing.TB, s storage.Interface, ns, name string, labels map[string]string) int64 {
	t.Helper()
	kv, err := s.Get(context.Background(), key(ns, name))
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Update(context.Background(), key(ns, name), value(ns, name, labels, fmt.Sprint(kv.Revision)), kv.Revision)
	if err != nil {
		t.Fatalf("update %s/%s: %v", ns, name, err)
	}
	return rev
}

func mustDelete(t testing.TB, s storage.Interface, ns, name string) int64 {
	t.Helper()
	kv, err := s.Delete(context.Background(), key(ns, name), 0)
	if err != nil {
		t.Fatalf("delete %s/%s: %v", ns, name, err)
	}
	return kv.Revision
}

func labelPred(t testing.TB, sel string) storage.Predicate {
	t.Helper()
	l, err := object.ParseLabelSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return storage.Predicate{Label: l}
}

// meta decodes what tests compare of an object.
type meta struct {
	Key    string
	RV     string
	Labels map[string]string
}

func metaOf(t testing.TB, b []byte) meta {
	t.Helper()
	var o wire.PartialObject
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("bad object %q: %v", b, err)
	}
	return meta{Key: key(o.Metadata.Namespace, o.Metadata.Name), RV: o.Metadata.ResourceVersion, Labels: o.Metadata.Labels}
}

func (m meta) String() string {
	return fmt.Sprintf("%s@%s%v", m.Key, m.RV, slices.Sorted(maps.Keys(m.Labels)))
}

// listAll follows continue tokens to the end and checks that every page
// has the first page's revision.
func listAll(t testing.TB, lw storage.ListWatcher, prefix string, opts storage.GetListOptions) ([]storage.KV, int64, error) {
	t.Helper()
	var items []storage.KV
	var rev int64
	for i := 0; ; i++ {
		page, err := lw.GetList(context.Background(), prefix, opts)
		if err != nil {
			return nil, 0, err
		}
		if i == 0 {
			rev = page.Revision
		} else if page.Revision != rev {
			t.Fatalf("page %d revision %d, first page %d", i, page.Revision, rev)
		}
		if opts.Limit > 0 && int64(len(page.Items)) > opts.Limit {
			t.Fatalf("page of %d items, limit %d", len(page.Items), opts.Limit)
		}
		if page.RemainingItemCount != nil && page.Continue == "" {
			t.Fatalf("remainingItemCount without continue")
		}
		items = append(items, page.Items...)
		if page.Continue == "" {
			return items, rev, nil
		}
		opts = storage.GetListOptions{Continue: page.Continue, Limit: opts.Limit, Predicate: opts.Predicate}
	}
}

// oracleList reads etcd at rev directly and filters with p.
func oracleList(t testing.TB, s storage.Interface, prefix string, rev int64, p storage.Predicate) []storage.KV {
	t.Helper()
	res, err := s.List(context.Background(), prefix, storage.ListOptions{Revision: rev})
	if err != nil {
		t.Fatalf("oracle list at %d: %v", rev, err)
	}
	var out []storage.KV
	for _, kv := range res.Items {
		if ok, err := p.Matches(kv.Value); err != nil {
			t.Fatal(err)
		} else if ok {
			out = append(out, kv)
		}
	}
	return out
}

func sameKVs(a, b []storage.KV) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d items, want %d:\n got %v\nwant %v", len(a), len(b), kvKeys(a), kvKeys(b))
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Revision != b[i].Revision || string(a[i].Value) != string(b[i].Value) {
			return fmt.Errorf("item %d: got %s@%d want %s@%d (%s vs %s)", i, a[i].Key, a[i].Revision, b[i].Key, b[i].Revision, a[i].Value, b[i].Value)
		}
	}
	return nil
}

func kvKeys(kvs []storage.KV) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = fmt.Sprintf("%s@%d", kv.Key, kv.Revision)
	}
	return out
}

// nextN reads n events from w, failing the test on error or timeout.
func nextN(t testing.TB, w storage.EventStream, n int) []storage.WatchEvent {
	t.Helper()
	out := make([]storage.WatchEvent, 0, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(out) < n {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
	return out
}

// describe renders events as "TYPE key@rv" strings for comparison.
func describe(t testing.TB, evs []storage.WatchEvent) []string {
	t.Helper()
	out := make([]string, len(evs))
	for i, ev := range evs {
		if ev.Type == wire.Bookmark {
			out[i] = fmt.Sprintf("BOOKMARK@%d end=%v", ev.Revision, ev.InitialEventsEnd)
			continue
		}
		m := metaOf(t, ev.Object)
		if m.RV != fmt.Sprint(ev.Revision) {
			t.Fatalf("event %s: object RV %s, event revision %d", ev.Type, m.RV, ev.Revision)
		}
		if ev.Frame != nil && string(ev.Frame) != string(wire.EventLine(ev.Type, ev.Object)) {
			t.Fatalf("frame %q does not match object", ev.Frame)
		}
		out[i] = fmt.Sprintf("%s %s", ev.Type, m)
	}
	return out
}

// noEvent checks that w has nothing to say within a short while.
func noEvent(t testing.TB, w storage.EventStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if ev, err := w.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unexpected event %v %s, err %v", ev.Type, ev.Object, err)
	}
}
