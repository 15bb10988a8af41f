package bench

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/wire"
)

// idleWatcher never delivers an event; Next returns when ctx ends or it
// is closed.
type idleWatcher struct {
	ctx  context.Context
	once sync.Once
	done chan struct{}
}

func (w *idleWatcher) Next() (wire.Event[*corev1.Pod], error) {
	select {
	case <-w.ctx.Done():
		return wire.Event[*corev1.Pod]{}, w.ctx.Err()
	case <-w.done:
		return wire.Event[*corev1.Pod]{}, context.Canceled
	}
}

func (w *idleWatcher) Close() error { w.once.Do(func() { close(w.done) }); return nil }

// TestInformerDedupKeepsPodsEqual: the informer's default sharing of
// equal parts leaves every stored production-shaped pod deeply equal to
// the one listed, while replicas of one ReplicaSet share their
// containers; with DisableDedup nothing is shared.
func TestInformerDedupKeepsPodsEqual(t *testing.T) {
	const n = 2 * PodsPerReplicaSet
	want := make([]*corev1.Pod, n)
	for i := range want {
		want[i] = ProductionPod("ns", i)
		want[i].UID = types.UID(fmt.Sprintf("uid-%d", i))
		want[i].ResourceVersion = "7"
	}
	lw := informer.ListWatchFuncs[*corev1.Pod]{
		ListFunc: func(context.Context, wire.ListOptions) (*wire.List[*corev1.Pod], error) {
			l := &wire.List[*corev1.Pod]{Metadata: wire.ListMeta{ResourceVersion: "7"}}
			for _, p := range want {
				l.Items = append(l.Items, p.DeepCopy())
			}
			return l, nil
		},
		WatchFunc: func(ctx context.Context, _ wire.ListOptions) (client.Watcher[*corev1.Pod], error) {
			return &idleWatcher{ctx: ctx, done: make(chan struct{})}, nil
		},
	}
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableDedup=%v", disable), func(t *testing.T) {
			inf, err := informer.New(lw, informer.Options[*corev1.Pod]{DisableDedup: disable})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- inf.Run(ctx) }()
			defer func() { cancel(); <-done }()
			if err := pollUntil(ctx, time.Millisecond, inf.HasSynced); err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				got, ok := inf.Lister().Get(w.Namespace, w.Name)
				if !ok || !reflect.DeepEqual(got, w) {
					t.Fatalf("stored pod %s differs from the listed one", w.Name)
				}
			}
			a, _ := inf.Lister().Get("ns", ObjectName(0))
			b, _ := inf.Lister().Get("ns", ObjectName(1))
			shared := &a.Spec.Containers[0] == &b.Spec.Containers[0]
			if shared == disable {
				t.Errorf("replicas share containers: %v, want %v", shared, !disable)
			}
		})
	}
}

// TestDropManagedFieldsOf: the opt-in transform clears a typed pod's
// managedFields and leaves the rest.
func TestDropManagedFieldsOf(t *testing.T) {
	p := ProductionPod("ns", 3)
	want := p.DeepCopy()
	want.ManagedFields = nil
	got, err := informer.DropManagedFieldsOf(p)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DropManagedFieldsOf = %v, %v", got.ManagedFields, err)
	}
}
