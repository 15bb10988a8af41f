package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/wire"
)

// kubeProtoInfo is kube-apiserver's protobuf serializer configuration.
var kubeProtoInfo = func() runtime.SerializerInfo {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		panic("no protobuf serializer")
	}
	return info
}()

func kubeProtoEncode(t testing.TB, obj runtime.Object) []byte {
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(kubeProtoInfo.Serializer, corev1.SchemeGroupVersion), obj)
	if err != nil {
		t.Error(err)
	}
	return b
}

// kubeProtoFrame is one watch frame as kube-apiserver's watch encoder
// writes it: the embedded object enveloped, the event not, in a
// length-delimited frame.
func kubeProtoFrame(t testing.TB, typ watch.EventType, obj runtime.Object) []byte {
	var ev, out bytes.Buffer
	if err := kubeProtoInfo.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: string(typ),
		Object: runtime.RawExtension{Raw: kubeProtoEncode(t, obj)}}, &ev); err != nil {
		t.Error(err)
	}
	if _, err := kubeProtoInfo.StreamSerializer.Framer.NewFrameWriter(&out).Write(ev.Bytes()); err != nil {
		t.Error(err)
	}
	return out.Bytes()
}

// protoPodServer serves pods only in protobuf, as kube-apiserver does to a
// client that asks for it: a list at RV 100, and watches that (with
// sendInitialEvents) replay the pods and the initial-events-end bookmark,
// then send what is pushed on events.
type protoPodServer struct {
	t      testing.TB
	pods   []*corev1.Pod
	events chan []byte

	mu      sync.Mutex
	lists   int
	watches int
}

func (s *protoPodServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	q := r.URL.Query()
	if q.Get("watch") != "true" {
		s.mu.Lock()
		s.lists++
		s.mu.Unlock()
		l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "100"}}
		for _, p := range s.pods {
			l.Items = append(l.Items, *p)
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		_, _ = w.Write(kubeProtoEncode(s.t, l))
		return
	}
	s.mu.Lock()
	s.watches++
	s.mu.Unlock()
	w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
	w.WriteHeader(http.StatusOK)
	if q.Get("sendInitialEvents") == "true" {
		for _, p := range s.pods {
			_, _ = w.Write(kubeProtoFrame(s.t, watch.Added, p))
		}
		_, _ = w.Write(kubeProtoFrame(s.t, watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "100",
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}))
	}
	w.(http.Flusher).Flush()
	for {
		select {
		case fr := <-s.events:
			_, _ = w.Write(fr)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// TestInformerOverProtobuf syncs a *corev1.Pod informer from a server
// that speaks only protobuf, by LIST+WATCH and by streaming list, and
// follows a MODIFIED event and a bookmark after the sync.
func TestInformerOverProtobuf(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			s := &protoPodServer{t: t, events: make(chan []byte, 10)}
			for i := range 3 {
				s.pods = append(s.pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default",
					ResourceVersion: fmt.Sprint(90 + i), Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}})
			}
			srv := httptest.NewTLSServer(s)
			t.Cleanup(srv.Close) // after the informer's cleanup ends its watch
			c, err := client.New(&client.Config{Host: srv.URL, Insecure: true, QPS: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.CloseIdleConnections)
			pods := client.NewResource[*corev1.Pod](c, podsGVR).Namespace("default")
			inf, err := informer.New[*corev1.Pod](pods, informer.Options[*corev1.Pod]{
				Reflector: informer.ReflectorOptions{StreamingList: streaming}})
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder[*corev1.Pod](t)
			if _, err := inf.AddEventHandler(rec, informer.HandlerOptions{}); err != nil {
				t.Fatal(err)
			}
			runInformer(t, inf)
			if got := inf.LastSyncResourceVersion(); got != "100" {
				t.Fatalf("synced at RV %q, want the list's or end bookmark's 100", got)
			}
			got, ok := inf.Lister().GetByKey("default/p1")
			if !ok || got.Spec.Containers[0].Image != "nginx" || got.Labels["app"] != "web" {
				t.Fatalf("store has %+v", got)
			}
			s.mu.Lock()
			lists := s.lists
			s.mu.Unlock()
			if streaming != (lists == 0) {
				t.Fatalf("streaming=%v made %d lists", streaming, lists)
			}

			mod := s.pods[1].DeepCopy()
			mod.ResourceVersion = "101"
			mod.Spec.Containers[0].Image = "nginx:2"
			s.events <- kubeProtoFrame(t, watch.Modified, mod)
			s.events <- kubeProtoFrame(t, watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "150"}})
			var names []string
			for range 3 {
				select {
				case e := <-rec.events:
					names = append(names, e)
				case <-time.After(30 * time.Second):
					t.Fatal("no event")
				}
			}
			sort.Strings(names) // adds come in no set order
			if fmt.Sprint(names) != "[add default/p0 add default/p1 add default/p2]" {
				t.Fatalf("initial events %v", names)
			}
			rec.expect("update default/p1")
			if got, _ := inf.Lister().GetByKey("default/p1"); got.Spec.Containers[0].Image != "nginx:2" {
				t.Fatalf("store has image %q", got.Spec.Containers[0].Image)
			}
			deadline := time.Now().Add(30 * time.Second)
			for inf.LastSyncResourceVersion() != "150" {
				if time.Now().After(deadline) {
					t.Fatalf("bookmark not applied: RV %q", inf.LastSyncResourceVersion())
				}
				time.Sleep(5 * time.Millisecond) // polling a real condition, with a deadline
			}
		})
	}
}

// TestProtobufAgainstListwatchServe: a *corev1.Pod resource asks listwatch
// serve for protobuf (which it now serves for built-in kinds) and reads
// every answer, errors and the streaming initial list too; the first write,
// sent before any protobuf answer, goes as JSON.
func TestProtobufAgainstListwatchServe(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := ourClient(t, s)
	ctx := t.Context()
	pods := client.NewResource[*corev1.Pod](c, podsGVR).Namespace("default")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	created, err := pods.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx, "a")
	if err != nil || got.UID == "" || got.Spec.Containers[0].Image != "nginx" {
		t.Fatalf("get: %v %+v", err, got)
	}
	// The Get was answered in protobuf, so this write is sent in protobuf.
	got.Labels = map[string]string{"x": "y"}
	if _, err := pods.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	l, err := pods.List(ctx, wire.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Labels["x"] != "y" {
		t.Fatalf("list: %v", err)
	}
	if _, err := pods.Get(ctx, "missing"); !client.IsNotFound(err) {
		t.Fatalf("404: %v", err)
	}
	send := true
	w, err := pods.Watch(ctx, wire.ListOptions{SendInitialEvents: &send, ResourceVersionMatch: wire.MatchNotOlderThan,
		AllowWatchBookmarks: true, ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == wire.Bookmark {
			if ev.Object.Annotations[wire.AnnotationInitialEventsEnd] != "true" || ev.Object.ResourceVersion == "" {
				t.Fatalf("end bookmark %+v", ev.Object.ObjectMeta)
			}
			break
		}
		if ev.Type != wire.Added || ev.Object.Name != "a" {
			t.Fatalf("event %s %s", ev.Type, ev.Object.Name)
		}
	}
}
