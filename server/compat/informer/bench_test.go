package informer_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/wire"
)

func smallPods(n int) []corev1.Pod {
	pods := make([]corev1.Pod, n)
	for i := range pods {
		pods[i] = corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns" + strconv.Itoa(i%10), Name: "pod-" + strconv.Itoa(i),
			ResourceVersion: strconv.Itoa(i + 1), Labels: map[string]string{"app": "a" + strconv.Itoa(i%7)},
		}}
	}
	return pods
}

// idleWatcher is a watch on which nothing happens.
type idleWatcher struct{ ctx context.Context }

func (w idleWatcher) Next() (wire.Event[*corev1.Pod], error) {
	<-w.ctx.Done()
	return wire.Event[*corev1.Pod]{}, w.ctx.Err()
}
func (w idleWatcher) Close() error { return nil }

// clientGoLW is client-go's ListWatch without watch-list semantics, so both
// informers start from the same single LIST.
type clientGoLW struct{ *cache.ListWatch }

func (clientGoLW) IsWatchListSemanticsUnSupported() bool { return true }

// BenchmarkSync measures the time and allocations from Run to the last
// initial OnAdd delivered, for this package and client-go's
// SharedIndexInformer, fed the same in-memory list. Compare with
//
//	go test -run '^$' -bench BenchmarkSync -benchmem ./server/compat/informer
func BenchmarkSync(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		pods := smallPods(n)
		ptrs := make([]*corev1.Pod, n)
		for i := range pods {
			ptrs[i] = &pods[i]
		}
		b.Run(fmt.Sprintf("listwatch/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				lw := informer.ListWatchFuncs[*corev1.Pod]{
					ListFunc: func(context.Context, wire.ListOptions) (*wire.List[*corev1.Pod], error) {
						return &wire.List[*corev1.Pod]{Metadata: wire.ListMeta{ResourceVersion: strconv.Itoa(n)}, Items: ptrs}, nil
					},
					WatchFunc: func(ctx context.Context, _ wire.ListOptions) (client.Watcher[*corev1.Pod], error) {
						return idleWatcher{ctx}, nil
					},
				}
				inf, _ := informer.New[*corev1.Pod](lw, informer.Options[*corev1.Pod]{Reflector: informer.ReflectorOptions{Logger: quiet}})
				var got atomic.Int64
				all := make(chan struct{})
				inf.AddEventHandler(informer.HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
					if got.Add(1) == int64(n) {
						close(all)
					}
				}}, informer.HandlerOptions{})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { inf.Run(ctx); close(done) }()
				<-all
				cancel()
				<-done
			}
		})
		b.Run(fmt.Sprintf("client-go/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				lw := clientGoLW{&cache.ListWatch{
					ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
						return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(n)}, Items: pods}, nil
					},
					WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
						return watch.NewFake(), nil
					},
				}}
				inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{
					cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
					"label": func(obj any) ([]string, error) {
						var out []string
						for k, v := range obj.(*corev1.Pod).Labels {
							out = append(out, k+"="+v)
						}
						return out, nil
					},
				})
				var got atomic.Int64
				all := make(chan struct{})
				inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
					if got.Add(1) == int64(n) {
						close(all)
					}
				}})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { inf.RunWithContext(ctx); close(done) }()
				<-all
				cancel()
				<-done
			}
		})
	}
}
