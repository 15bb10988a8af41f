package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage"
)

// TestRequestProgressAlone: RequestProgress by itself brings a progress
// event to a progress-enabled watch, and none to one that did not ask.
// etcd's periodic notification is an hour away, so TestWatchProgress's
// "on request or periodic" cannot pass by the periodic path here.
func TestRequestProgressAlone(t *testing.T) {
	ctx := context.Background()
	e, err := StartEmbedded(ctx, EmbeddedConfig{Dir: t.TempDir(), ProgressNotifyInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := New(e.Client())
	rev, err := s.Create(ctx, "/registry/pods/default/a", []byte(`{"metadata":{"name":"a"}}`))
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := s.Watch(ctx, "/registry/pods/", rev, false)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	w, err := s.Watch(ctx, "/registry/pods/", rev, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other, err := s.Create(ctx, "/registry/nodes/n", []byte(`{"metadata":{"name":"n"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ev, err := w.Next(wctx)
	if err != nil || ev.Type != storage.EventProgress || ev.Revision < other {
		t.Fatalf("got %+v, %v; want progress at >= %d", ev, err, other)
	}
	qctx, qcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer qcancel()
	if ev, err := quiet.Next(qctx); err == nil {
		t.Fatalf("watch without progress got %+v", ev)
	}
}
