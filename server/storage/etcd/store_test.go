package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcd"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

func pod(name string, labels string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"default","labels":{%s}},"spec":{}}`, name, labels)
}

// rvOf decodes metadata.resourceVersion from a returned value.
func rvOf(t *testing.T, value []byte) string {
	t.Helper()
	var o struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(value, &o); err != nil {
		t.Fatalf("value %s: %v", value, err)
	}
	return o.Metadata.ResourceVersion
}

func checkKV(t *testing.T, kv storage.KV, key string, rev int64) {
	t.Helper()
	if kv.Key != key || kv.Revision != rev {
		t.Fatalf("got key %q revision %d, want %q %d", kv.Key, kv.Revision, key, rev)
	}
	if got := rvOf(t, kv.Value); got != fmt.Sprint(rev) {
		t.Fatalf("value resourceVersion %q, want %d", got, rev)
	}
}

func TestWritesAndErrors(t *testing.T) {
	t.Parallel()
	s := etcdtest.Start(t).Store
	ctx := context.Background()
	const key = "/registry/pods/default/a"

	if _, err := s.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get missing: %v, want ErrNotFound", err)
	}
	rev1, err := s.Create(ctx, key, pod("a", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, key, pod("a", "")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
	kv, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	checkKV(t, kv, key, rev1)

	rev2, err := s.Update(ctx, key, pod("a", `"x":"1"`), rev1)
	if err != nil {
		t.Fatal(err)
	}
	if rev2 <= rev1 {
		t.Fatalf("update revision %d not after %d", rev2, rev1)
	}
	if _, err := s.Update(ctx, key, pod("a", `"x":"2"`), rev1); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale Update: %v, want ErrConflict", err)
	}
	if _, err := s.Update(ctx, "/registry/pods/default/missing", pod("m", ""), rev1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Update missing: %v, want ErrNotFound", err)
	}
	if _, err := s.Update(ctx, "/registry/pods/default/missing", pod("m", ""), 0); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unconditional Update missing: %v, want ErrNotFound (Update never creates)", err)
	}
	rev3, err := s.Update(ctx, key, pod("a", `"x":"3"`), 0)
	if err != nil {
		t.Fatalf("unconditional Update: %v", err)
	}

	if _, err := s.Delete(ctx, key, rev2); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale Delete: %v, want ErrConflict", err)
	}
	del, err := s.Delete(ctx, key, rev3)
	if err != nil {
		t.Fatal(err)
	}
	if del.Revision <= rev3 {
		t.Fatalf("delete revision %d not after %d", del.Revision, rev3)
	}
	checkKV(t, del, key, del.Revision)
	if !strings.Contains(string(del.Value), `"x":"3"`) {
		t.Fatalf("deleted value %s is not the last one", del.Value)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get deleted: %v, want ErrNotFound", err)
	}
	if _, err := s.Delete(ctx, key, 0); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Delete deleted: %v, want ErrNotFound", err)
	}
	// A deleted key can be created again.
	if _, err := s.Create(ctx, key, pod("a", "")); err != nil {
		t.Fatalf("re-Create: %v", err)
	}
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cur <= del.Revision {
		t.Fatalf("CurrentRevision %d not after the delete %d", cur, del.Revision)
	}
}

func TestInvalidValue(t *testing.T) {
	t.Parallel()
	s := etcdtest.Start(t).Store
	ctx := context.Background()
	if _, err := s.Create(ctx, "/registry/x/bad", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "/registry/x/bad"); !errors.Is(err, storage.ErrInvalidValue) {
		t.Fatalf("Get of a non-object: %v, want ErrInvalidValue", err)
	}
}

// TestListPaging pages five keys two at a time; a key just outside the
// prefix must never appear.
func TestListPaging(t *testing.T) {
	t.Parallel()
	s := etcdtest.Start(t).Store
	ctx := context.Background()
	const prefix = "/registry/pods/default/"
	var want []string
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if _, err := s.Create(ctx, prefix+n, pod(n, "")); err != nil {
			t.Fatal(err)
		}
		want = append(want, prefix+n)
	}
	if _, err := s.Create(ctx, "/registry/pods/default0", pod("z", "")); err != nil {
		t.Fatal(err)
	}
	var got []string
	opts := storage.ListOptions{Limit: 2}
	var remaining []int64
	var firstRev int64
	for {
		res, err := s.List(ctx, prefix, opts)
		if err != nil {
			t.Fatal(err)
		}
		if firstRev == 0 {
			firstRev = res.Revision
			opts.Revision = res.Revision
		} else if res.Revision != firstRev {
			t.Fatalf("page revision %d, want %d", res.Revision, firstRev)
		}
		for _, kv := range res.Items {
			checkKV(t, kv, kv.Key, kv.Revision)
			got = append(got, kv.Key)
		}
		remaining = append(remaining, res.Remaining)
		if !res.More {
			break
		}
		opts.StartKey = res.Items[len(res.Items)-1].Key + "\x00"
		// A write after the first page must not show up in later ones.
		if _, err := s.Create(ctx, prefix+"bb", pod("bb", "")); err != nil && !errors.Is(err, storage.ErrExists) {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paged keys %v, want %v", got, want)
	}
	if fmt.Sprint(remaining) != "[3 1 0]" {
		t.Fatalf("remaining %v, want [3 1 0]", remaining)
	}
	all, err := s.List(ctx, prefix, storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 6 || all.More || all.Remaining != 0 {
		t.Fatalf("unpaged list: %d items more=%v remaining=%d, want 6 false 0", len(all.Items), all.More, all.Remaining)
	}
}

func TestListOldRevisionAndErrors(t *testing.T) {
	t.Parallel()
	s := etcdtest.Start(t).Store
	ctx := context.Background()
	const key = "/registry/pods/default/a"
	rev1, err := s.Create(ctx, key, pod("a", `"v":"1"`))
	if err != nil {
		t.Fatal(err)
	}
	rev2, err := s.Update(ctx, key, pod("a", `"v":"2"`), rev1)
	if err != nil {
		t.Fatal(err)
	}
	old, err := s.List(ctx, "/registry/pods/", storage.ListOptions{Revision: rev1})
	if err != nil {
		t.Fatal(err)
	}
	if old.Revision != rev1 || len(old.Items) != 1 || !strings.Contains(string(old.Items[0].Value), `"v":"1"`) {
		t.Fatalf("list at %d: %+v", rev1, old)
	}
	checkKV(t, old.Items[0], key, rev1)

	if _, err := s.List(ctx, "/registry/pods/", storage.ListOptions{StartKey: "/registry/nodes/a"}); !errors.Is(err, storage.ErrInvalidStartKey) {
		t.Fatalf("start key outside prefix: %v, want ErrInvalidStartKey", err)
	}
	if _, err := s.List(ctx, "/registry/pods/", storage.ListOptions{Revision: rev2 + 100}); !errors.Is(err, storage.ErrFutureRevision) {
		t.Fatalf("future revision: %v, want ErrFutureRevision", err)
	}
	if err := s.Compact(ctx, rev2); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, rev2); err != nil {
		t.Fatalf("compacting again: %v, want nil", err)
	}
	if err := s.Compact(ctx, rev1); err != nil {
		t.Fatalf("compacting to an older revision: %v, want nil", err)
	}
	_, err = s.List(ctx, "/registry/pods/", storage.ListOptions{Revision: rev1})
	var ce *storage.CompactedError
	if !errors.As(err, &ce) || ce.Requested != rev1 {
		t.Fatalf("list at compacted revision: %v, want *CompactedError for %d", err, rev1)
	}
	if _, err := s.List(ctx, "/registry/pods/", storage.ListOptions{Revision: rev2}); err != nil {
		t.Fatalf("list at the compaction revision itself: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	reg := prometheus.NewRegistry()
	s := etcd.New(e.Client, etcd.WithRegisterer(reg))
	s2 := etcd.New(e.Client, etcd.WithRegisterer(reg)) // shares the collectors
	ctx := context.Background()
	if _, err := s.Create(ctx, "/registry/pods/default/a", pod("a", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Create(ctx, "/registry/pods/default/a", pod("a", "")); !errors.Is(err, storage.ErrExists) {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "etcd_requests_total":
				found[labels["operation"]+"/"+labels["type"]+"/"+labels["result"]] = m.GetCounter().GetValue()
			case "etcd_request_duration_seconds":
				found["duration/"+labels["operation"]] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	for k, v := range map[string]float64{"create/pods/ok": 1, "create/pods/exists": 1, "duration/create": 2} {
		if found[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, found[k], v, found)
		}
	}
}

// TestLargeValues: values up to the API server's 3 MiB body limit are
// stored; larger ones fail with storage.ErrValueTooLarge, not an untyped
// gRPC error.
func TestLargeValues(t *testing.T) {
	e := etcdtest.Start(t)
	ctx := t.Context()
	big := func(n int) []byte {
		return []byte(`{"metadata":{"name":"big"},"data":"` + strings.Repeat("x", n) + `"}`)
	}
	if _, err := e.Store.Create(ctx, "/registry/t/ok", big(etcd.MaxValueBytes-100)); err != nil {
		t.Fatalf("3 MiB value refused: %v", err)
	}
	if _, err := e.Store.Create(ctx, "/registry/t/huge", big(etcd.MaxValueBytes+2<<20)); !errors.Is(err, storage.ErrValueTooLarge) {
		t.Fatalf("5 MiB value: got %v, want ErrValueTooLarge", err)
	}
}
