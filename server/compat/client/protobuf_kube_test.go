package client_test

import (
	"fmt"
	"net/http"
	"os"
	"reflect"
	"sort"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// TestProtobufAgainstKubeAPIServer runs the protobuf path against a real
// kube-apiserver when LISTWATCH_KUBE_URL and LISTWATCH_KUBE_TOKEN name one
// (a token of system:masters; the server's certificate is not checked).
// It uses configmaps in namespace default and deletes what it creates.
func TestProtobufAgainstKubeAPIServer(t *testing.T) {
	host, token := os.Getenv("LISTWATCH_KUBE_URL"), os.Getenv("LISTWATCH_KUBE_TOKEN")
	if host == "" || token == "" {
		t.Skip("LISTWATCH_KUBE_URL and LISTWATCH_KUBE_TOKEN not set")
	}
	ctx := ctxT(t)
	seen := &contentTypes{}
	c, err := client.New(&client.Config{Host: host, BearerToken: token, Insecure: true, QPS: -1, WrapTransport: seen.wrap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	cms := client.NewResource[*corev1.ConfigMap](c, configMaps).Namespace("default")
	label := fmt.Sprintf("lwproto-%d", os.Getpid())
	prefix := label + "-"
	cm := func(n string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: prefix + n, Labels: map[string]string{"t": label}},
			Data: map[string]string{"k": n}}
	}
	t.Cleanup(func() {
		_ = cms.DeleteCollection(ctxT(t), wire.DeleteOptions{}, wire.ListOptions{LabelSelector: "t=" + label})
	})

	// The first write is JSON; reads are protobuf; then writes are too.
	if _, err := cms.Create(ctx, cm("a")); err != nil {
		t.Fatal(err)
	}
	if !isProtobuf(seen.last()) {
		t.Fatal("kube-apiserver did not answer the create in protobuf")
	}
	for _, n := range []string{"b", "c"} {
		if _, err := cms.Create(ctx, cm(n)); err != nil {
			t.Fatalf("protobuf create: %v", err)
		}
	}
	got, err := cms.Get(ctx, prefix+"b")
	if err != nil || got.Data["k"] != "b" || got.Kind != "ConfigMap" || got.APIVersion != "v1" {
		t.Fatalf("get: %v %+v", err, got)
	}
	// client-go reads the same object (it leaves TypeMeta empty).
	rc := &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	defer utilnet.CloseIdleConnectionsFor(hc.Transport)
	cs, err := kubernetes.NewForConfigAndClient(rc, hc)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := cs.CoreV1().ConfigMaps("default").Get(ctx, prefix+"b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mine := got.DeepCopy()
	mine.TypeMeta = metav1.TypeMeta{}
	if !reflect.DeepEqual(mine, theirs) {
		t.Fatalf("ours %+v\nclient-go %+v", mine, theirs)
	}

	// Errors arrive as protobuf Status.
	if _, err := cms.Create(ctx, cm("a")); !client.IsAlreadyExists(err) {
		t.Fatalf("create of an existing name: %v", err)
	}
	_, err = cms.Get(ctx, "missing")
	if st, _ := statusOf(err); !client.IsNotFound(err) || st.Message != `configmaps "missing" not found` || st.Details == nil || st.Details.Kind != "configmaps" {
		t.Fatalf("get of a missing name: %#v", err)
	}
	stale := got.DeepCopy()
	got.Data["k"] = "b2"
	updated, err := cms.Update(ctx, got)
	if err != nil || updated.Data["k"] != "b2" {
		t.Fatalf("protobuf update: %v", err)
	}
	if _, err := cms.Update(ctx, stale); !client.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}

	// Lists, paged.
	all, err := cms.ListAll(ctx, wire.ListOptions{LabelSelector: "t=" + label, Limit: 1})
	if err != nil || len(all.Items) != 3 || all.Metadata.ResourceVersion == "" {
		t.Fatalf("list: %v", err)
	}

	// A streaming list: the initial events, then the end bookmark, then a
	// change.
	send := true
	w, err := cms.Watch(ctx, wire.ListOptions{LabelSelector: "t=" + label, SendInitialEvents: &send,
		ResourceVersionMatch: wire.MatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if ct := seen.last(); !isProtobuf(ct) {
		t.Fatalf("the watch is answered in %q, not protobuf", ct)
	}
	var names []string
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == wire.Bookmark {
			if ev.Object.Annotations[wire.AnnotationInitialEventsEnd] != "true" || ev.Object.ResourceVersion == "" {
				t.Fatalf("bookmark %+v", ev.Object.ObjectMeta)
			}
			break
		}
		names = append(names, string(ev.Type)+" "+ev.Object.Name)
	}
	sort.Strings(names)
	if fmt.Sprint(names) != fmt.Sprintf("[ADDED %sa ADDED %sb ADDED %sc]", prefix, prefix, prefix) {
		t.Fatalf("initial events %v", names)
	}
	if _, err := cms.Patch(ctx, prefix+"c", client.MergePatch, []byte(`{"data":{"k":"c2"}}`)); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == wire.Modified {
			if ev.Object.Name != prefix+"c" || ev.Object.Data["k"] != "c2" || ev.Object.Kind != "ConfigMap" {
				t.Fatalf("modified %+v", ev.Object)
			}
			break
		}
	}

	// A watch the server refuses: a protobuf Status before the stream.
	if _, err := cms.Watch(ctx, wire.ListOptions{FieldSelector: "spec.nope=1"}); !client.IsBadRequest(err) {
		t.Fatalf("watch with a bad field selector: %v", err)
	}
}

// BenchmarkKubeListWatchPods lists benchItems pods, and streams them as
// the initial events of a watch, from a real kube-apiserver (see
// TestProtobufAgainstKubeAPIServer for the environment) with our client
// in protobuf, our client in JSON, and client-go.
func BenchmarkKubeListWatchPods(b *testing.B) {
	host, token := os.Getenv("LISTWATCH_KUBE_URL"), os.Getenv("LISTWATCH_KUBE_TOKEN")
	if host == "" || token == "" {
		b.Skip("LISTWATCH_KUBE_URL and LISTWATCH_KUBE_TOKEN not set")
	}
	ctx := ctxT(b)
	c, err := client.New(&client.Config{Host: host, BearerToken: token, Insecure: true, QPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.CloseIdleConnections)
	sas := client.NewResource[*corev1.ServiceAccount](c, client.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}).Namespace("default")
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil && !client.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	ours := client.NewResource[*corev1.Pod](c, pods).Namespace("default")
	sel := wire.ListOptions{LabelSelector: "app=bench"}
	if l, err := ours.List(ctx, sel); err != nil {
		b.Fatal(err)
	} else if len(l.Items) < benchItems {
		for i := range benchItems {
			p := benchPod(i)
			p.Namespace, p.ResourceVersion, p.UID = "default", "", ""
			if _, err := ours.Create(ctx, p); err != nil && !client.IsAlreadyExists(err) {
				b.Fatal(err)
			}
		}
	}
	rc := &rest.Config{Host: host, BearerToken: token, QPS: -1, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { utilnet.CloseIdleConnectionsFor(hc.Transport) })
	cs, err := kubernetes.NewForConfigAndClient(rc, hc)
	if err != nil {
		b.Fatal(err)
	}
	send := true
	streamOpts := wire.ListOptions{LabelSelector: "app=bench", SendInitialEvents: &send,
		ResourceVersionMatch: wire.MatchNotOlderThan, AllowWatchBookmarks: true}
	for _, r := range []struct {
		name string
		res  *client.Resource[*corev1.Pod]
	}{{"listwatch-protobuf", ours}, {"listwatch-json", ours.JSONOnly()}} {
		b.Run("list/"+r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if l, err := r.res.List(ctx, sel); err != nil || len(l.Items) != benchItems {
					b.Fatal(err)
				}
			}
		})
		b.Run("stream/"+r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, err := r.res.Watch(ctx, streamOpts)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					ev, err := w.Next()
					if err != nil {
						b.Fatal(err)
					}
					if ev.Type == wire.Bookmark {
						break
					}
					n++
				}
				w.Close()
				if n != benchItems {
					b.Fatalf("%d events", n)
				}
			}
		})
	}
	b.Run("list/client-go-protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=bench"}); err != nil || len(l.Items) != benchItems {
				b.Fatal(err)
			}
		}
	})
	b.Run("stream/client-go-protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=bench", SendInitialEvents: &send,
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for ev := range w.ResultChan() {
				if ev.Type == "BOOKMARK" {
					break
				}
				n++
			}
			w.Stop()
			if n != benchItems {
				b.Fatalf("%d events", n)
			}
		}
	})
}

// contentTypes records the Content-Type of each response a Client reads.
type contentTypes struct {
	mu  sync.Mutex
	cts []string
}

func (c *contentTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			c.mu.Lock()
			c.cts = append(c.cts, resp.Header.Get("Content-Type"))
			c.mu.Unlock()
		}
		return resp, err
	})
}

// last is the Content-Type of the latest response.
func (c *contentTypes) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cts) == 0 {
		return ""
	}
	return c.cts[len(c.cts)-1]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
