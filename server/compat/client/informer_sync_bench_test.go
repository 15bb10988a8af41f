package client_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/server/bench"
)

// syncPods is how many production-shaped pods BenchmarkInformerSync's
// list holds.
const syncPods = 10_000

var syncList struct {
	once sync.Once
	gz   []byte // the list as kube-apiserver sends it: protobuf, gzip level 1
}

// recordedListServer answers every LIST of pods with the same bytes, a
// list of syncPods production pods encoded and compressed as
// kube-apiserver does (protobuf, gzip at its level 1), and every WATCH
// with a stream on which nothing happens. It costs next to no CPU, so a
// benchmark against it measures the clients alone, as on a cluster whose
// API server runs on other machines.
func recordedListServer(b testing.TB) http.Handler {
	syncList.once.Do(func() {
		pl := productionPodList(syncPods, "100000")
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		_, _ = zw.Write(kubeEncode(b, pl))
		_ = zw.Close()
		syncList.gz = buf.Bytes()
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if quietWatch(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			b.Error("a LIST without Accept-Encoding: gzip")
			http.Error(w, "gzip only", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(syncList.gz)
	})
}

// productionPodList is a list at resourceVersion rv of the bench's first
// n production pods, in namespace bench, each at resourceVersion 1.
func productionPodList(n int, rv string) *corev1.PodList {
	pl := &corev1.PodList{}
	pl.ResourceVersion = rv
	for i := range n {
		p := bench.ProductionPod("bench", i)
		p.ResourceVersion = "1"
		pl.Items = append(pl.Items, *p)
	}
	return pl
}

// quietWatch answers a WATCH with a protobuf stream on which nothing
// happens until the client goes, and reports whether r was one.
func quietWatch(w http.ResponseWriter, r *http.Request) bool {
	if q := r.URL.Query().Get("watch"); q != "true" && q != "1" {
		return false
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
	return true
}

// BenchmarkInformerSync times a typed pod informer from Run to its
// handler's last initial add, ours and client-go's at its defaults
// (protobuf, gzip), both listing syncPods production-shaped pods (the
// bench's pods fixture) from recordedListServer. Against kube-apiserver
// on the same two cores (README, Performance) the server's gzip takes
// about half a core from the clients; here they have the machine.
//
//	go test -run '^$' -bench InformerSync -benchtime 10x ./server/compat/client/
func BenchmarkInformerSync(b *testing.B) {
	srv := startTLS(b, recordedListServer(b))
	b.Run("listwatch", func(b *testing.B) {
		// gzip, as from a server on other machines (a loopback one is
		// not asked for it by default).
		c := newTestClient(b, srv, func(cfg *client.Config) { cfg.Compression = client.CompressionGzip })
		for b.Loop() {
			lw := informer.NewListWatchFromClient(client.NewResource[*corev1.Pod](c, pods).Namespace("bench"), "", "")
			inf, err := informer.New(lw, informer.Options[*corev1.Pod]{Reflector: informer.ReflectorOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
			if err != nil {
				b.Fatal(err)
			}
			all := make(chan struct{})
			var n atomic.Int64
			if _, err := inf.AddEventHandler(informer.HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
				if n.Add(1) == syncPods {
					close(all)
				}
			}}, informer.HandlerOptions{}); err != nil {
				b.Fatal(err)
			}
			runUntil(b, all, func(ctx context.Context) { _ = inf.Run(ctx) })
		}
	})
	b.Run("client-go", func(b *testing.B) {
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1,
			TLSClientConfig: rest.TLSClientConfig{CAData: caPEM(srv)},
			ContentConfig:   rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			p := cs.CoreV1().Pods("bench")
			lw := noWatchList{&cache.ListWatch{ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return p.List(ctx, o)
			}, WatchFuncWithContext: p.Watch}}
			inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			all := make(chan struct{})
			var n atomic.Int64
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
				if n.Add(1) == syncPods {
					close(all)
				}
			}}); err != nil {
				b.Fatal(err)
			}
			runUntil(b, all, inf.RunWithContext)
		}
	})
}

// noWatchList is client-go's ListWatch without watch-list semantics:
// recordedListServer answers LISTs (as client-go's reflector falls back
// to when a server does not stream).
type noWatchList struct{ *cache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// runUntil runs run until done is closed, then stops it and waits.
func runUntil(b *testing.B, done <-chan struct{}, run func(context.Context)) {
	ctx, cancel := context.WithCancel(ctxT(b))
	ended := make(chan struct{})
	go func() { run(ctx); close(ended) }()
	select {
	case <-done:
	case <-ended:
		b.Fatal("the informer ended before its sync")
	}
	cancel()
	<-ended
}
