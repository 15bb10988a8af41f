package client_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// benchServer answers a list of benchItems pods, and a watch that sends
// benchItems MODIFIED events and ends, identically for both clients.
func benchServer(b *testing.B) http.Handler {
	var list, events bytes.Buffer
	l := wire.List[*corev1.Pod]{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
	l.Metadata.ResourceVersion = "2000"
	for i := range benchItems {
		p := benchPod(i)
		l.Items = append(l.Items, p)
		line, _ := json.Marshal(wire.Event[*corev1.Pod]{Type: wire.Modified, Object: p})
		events.Write(line)
		events.WriteByte('\n')
	}
	_ = json.NewEncoder(&list).Encode(l)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			_, _ = w.Write(events.Bytes())
			return
		}
		_, _ = w.Write(list.Bytes())
	})
}

func benchClients(b *testing.B) (*client.Resource[*corev1.Pod], kubernetes.Interface) {
	srv := startTLS(b, benchServer(b))
	ours := client.NewResource[*corev1.Pod](newTestClient(b, srv, nil), pods).Namespace("bench")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM(srv)}, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		b.Fatal(err)
	}
	return ours, cs
}

// BenchmarkWatchPods streams benchItems pod events per op through our
// watcher and through client-go's typed watch, against the same server.
func BenchmarkWatchPods(b *testing.B) {
	ours, cs := benchClients(b)
	ctx := ctxT(b)
	b.Run("listwatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w, err := ours.Watch(ctx, wire.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				_, err := w.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			w.Close()
			if n != benchItems {
				b.Fatalf("%d events", n)
			}
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w, err := cs.CoreV1().Pods("bench").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for range w.ResultChan() {
				n++
			}
			w.Stop()
			if n != benchItems {
				b.Fatalf("%d events", n)
			}
		}
	})
}

// BenchmarkListPods lists benchItems pods per op with both clients.
func BenchmarkListPods(b *testing.B) {
	ours, cs := benchClients(b)
	ctx := ctxT(b)
	b.Run("listwatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l, err := ours.List(ctx, wire.ListOptions{})
			if err != nil || len(l.Items) != benchItems {
				b.Fatal(err)
			}
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l, err := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
			if err != nil || len(l.Items) != benchItems {
				b.Fatal(err)
			}
		}
	})
}
