package client_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// acceptProtobuf is the Accept header the client sends for a type with
// protobuf methods (TestProtobufGetListWatch checks it is sent, and
// TestProtobufFakeIsKube that client-go sends the same).
const acceptProtobuf = wire.ContentTypeProtobuf + ",application/json"

// The peer of these tests is k8s.io/apimachinery's protobuf serializer, as
// kube-apiserver configures it: enveloped objects, and watch events
// written by the stream serializer in length-delimited frames.
var kubeProto = func() runtime.SerializerInfo {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		panic("no protobuf serializer")
	}
	return info
}()

// kubeEncode is what kube-apiserver sends for obj: an envelope with
// apiVersion v1 and obj's kind.
func kubeEncode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(kubeProto.Serializer, corev1.SchemeGroupVersion), obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kubeFrame is one watch frame as kube-apiserver's watch encoder writes it.
func kubeFrame(t testing.TB, typ watch.EventType, obj runtime.Object) []byte {
	t.Helper()
	var ev, out bytes.Buffer
	if err := kubeProto.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: string(typ),
		Object: runtime.RawExtension{Raw: kubeEncode(t, obj)}}, &ev); err != nil {
		t.Fatal(err)
	}
	if _, err := kubeProto.StreamSerializer.Framer.NewFrameWriter(&out).Write(ev.Bytes()); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// kubeDecode is client-go's decode of an enveloped object.
func kubeDecode(t testing.TB, b []byte) runtime.Object {
	t.Helper()
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func protoPod(i int) *corev1.Pod {
	p := benchPod(i)
	p.TypeMeta = metav1.TypeMeta{}
	p.Namespace = "ns"
	return p
}

// protoAPI answers pods in ns "ns" like kube-apiserver: protobuf when the
// Accept header asks for it first, JSON otherwise; errors as Status in the
// same encoding.
type protoAPI struct {
	t      testing.TB
	pods   []*corev1.Pod
	frames [][]byte // the watch stream, sent whole then ended
	// refuseProtobufBodies answers a protobuf write 415, as a server that
	// reads only JSON would.
	refuseProtobufBodies bool

	mu    sync.Mutex
	reqs  []seenRequest
	wrote []runtime.Object // decoded write bodies, by kube's decoder
}

func (f *protoAPI) seen() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.reqs...)
}

func (f *protoAPI) respond(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	if strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		w.WriteHeader(code)
		_, _ = w.Write(kubeEncode(f.t, obj))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), obj)
	_, _ = w.Write(b)
}

func (f *protoAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, seenRequest{method: r.Method, path: r.URL.Path, query: r.URL.Query(), header: r.Header.Clone(), body: body})
	f.mu.Unlock()
	gr := schema.GroupResource{Resource: "pods"}
	name := strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/ns/pods")
	name = strings.TrimPrefix(name, "/")
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost || r.Method == http.MethodPut:
		if f.refuseProtobufBodies && r.Header.Get("Content-Type") == runtime.ContentTypeProtobuf {
			f.respond(w, r, 415, &metav1.Status{Status: metav1.StatusFailure, Code: 415, Reason: metav1.StatusReasonUnsupportedMediaType,
				Message: "the body of the request was in an unknown format"})
			return
		}
		// A JSON body may leave out apiVersion and kind, which kube
		// takes from the URL; a protobuf one must carry them here.
		var def *schema.GroupVersionKind
		if r.Header.Get("Content-Type") == "application/json" {
			def = &schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, def, nil)
		if err != nil {
			f.respond(w, r, 400, &apierrors.NewBadRequest(err.Error()).ErrStatus)
			return
		}
		f.mu.Lock()
		f.wrote = append(f.wrote, obj)
		f.mu.Unlock()
		p := obj.(*corev1.Pod).DeepCopy()
		p.ResourceVersion = "77"
		f.respond(w, r, 201, p)
	case q.Get("watch") == "true":
		if !strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
			f.respond(w, r, 406, &apierrors.NewBadRequest("this fake watches only in protobuf").ErrStatus)
			return
		}
		if q.Get("resourceVersion") == "1" {
			f.respond(w, r, 410, &apierrors.NewResourceExpired("too old resource version: 1 (50)").ErrStatus)
			return
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		w.WriteHeader(200)
		for _, fr := range f.frames {
			_, _ = w.Write(fr)
		}
	case name == "":
		list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "50"}}
		items := f.pods
		if q.Get("limit") == "2" && q.Get("continue") == "" && len(items) > 2 {
			rest := int64(len(items) - 2)
			list.Continue, list.RemainingItemCount, items = "page2", &rest, items[:2]
		} else if q.Get("continue") == "page2" {
			items = items[2:]
		}
		for _, p := range items {
			list.Items = append(list.Items, *p)
		}
		f.respond(w, r, 200, list)
	default:
		for _, p := range f.pods {
			if p.Name == name {
				f.respond(w, r, 200, p)
				return
			}
		}
		f.respond(w, r, 404, &apierrors.NewNotFound(gr, name).ErrStatus)
	}
}

func newProtoAPI(t testing.TB, n int) *protoAPI {
	f := &protoAPI{t: t}
	for i := range n {
		f.pods = append(f.pods, protoPod(i))
	}
	return f
}

func protoPods(t testing.TB, f *protoAPI, mutate func(*client.Config)) *client.Resource[*corev1.Pod] {
	srv := startTLS(t, f)
	return client.NewResource[*corev1.Pod](newTestClient(t, srv, mutate), pods).Namespace("ns")
}

// sameAsKube fails unless got equals client-go's decode of what the
// server sent.
func sameAsKube(t *testing.T, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("decoded\n%s\nclient-go decodes\n%s", g, w)
	}
}

func TestProtobufGetListWatch(t *testing.T) {
	f := newProtoAPI(t, 3)
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "60",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	modified := protoPod(1)
	modified.ResourceVersion = "55"
	modified.Labels["changed"] = "yes"
	f.frames = [][]byte{
		kubeFrame(t, watch.Added, f.pods[0]),
		kubeFrame(t, watch.Modified, modified),
		kubeFrame(t, watch.Deleted, f.pods[2]),
		kubeFrame(t, watch.Bookmark, bookmark),
		kubeFrame(t, watch.Error, &apierrors.NewResourceExpired("too old resource version: 50 (60)").ErrStatus),
	}
	r := protoPods(t, f, nil)
	ctx := ctxT(t)

	got, err := r.Get(ctx, "pod-0001")
	if err != nil {
		t.Fatal(err)
	}
	sameAsKube(t, got, kubeDecode(t, kubeEncode(t, f.pods[1])))
	if got.Kind != "Pod" || got.APIVersion != "v1" {
		t.Fatalf("TypeMeta %+v, want the envelope's", got.TypeMeta)
	}

	page, err := r.List(ctx, wire.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if page.Metadata.ResourceVersion != "50" || page.Metadata.Continue != "page2" ||
		page.Metadata.RemainingItemCount == nil || *page.Metadata.RemainingItemCount != 1 || page.Kind != "PodList" {
		t.Fatalf("list meta %+v %+v", page.TypeMeta, page.Metadata)
	}
	all, err := r.ListAll(ctx, wire.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	kubeList := kubeDecode(t, kubeEncode(t, &corev1.PodList{Items: []corev1.Pod{*f.pods[0], *f.pods[1], *f.pods[2]}})).(*corev1.PodList)
	if len(all.Items) != 3 {
		t.Fatalf("%d items", len(all.Items))
	}
	for i := range all.Items {
		sameAsKube(t, all.Items[i], &kubeList.Items[i])
	}

	w, err := r.Watch(ctx, wire.ListOptions{ResourceVersion: "50"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, want := range []struct {
		typ wire.EventType
		obj *corev1.Pod
	}{{wire.Added, f.pods[0]}, {wire.Modified, modified}, {wire.Deleted, f.pods[2]}, {wire.Bookmark, bookmark}} {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Type != want.typ {
			t.Fatalf("event %d: type %s, want %s", i, ev.Type, want.typ)
		}
		sameAsKube(t, ev.Object, kubeDecode(t, kubeEncode(t, want.obj)))
	}
	if _, err := w.Next(); !client.IsExpired(err) || !client.IsGone(err) || wire.CodeOf(err) != 410 {
		t.Fatalf("ERROR event: %v, want 410 Expired", err)
	}

	for _, req := range f.seen() {
		if a := req.header.Get("Accept"); a != acceptProtobuf {
			t.Fatalf("%s %s: Accept %q, want client-go's", req.method, req.path, a)
		}
	}
}

func TestProtobufStatusErrors(t *testing.T) {
	f := newProtoAPI(t, 1)
	r := protoPods(t, f, nil)
	ctx := ctxT(t)
	_, err := r.Get(ctx, "missing")
	st, ok := statusOf(err)
	if !client.IsNotFound(err) || !ok || st.Message != `pods "missing" not found` || st.Details == nil || st.Details.Name != "missing" || st.Kind != "Status" {
		t.Fatalf("Get of a missing pod: %#v", err)
	}
	if _, err := r.Watch(ctx, wire.ListOptions{ResourceVersion: "1"}); !client.IsExpired(err) || wire.CodeOf(err) != 410 {
		t.Fatalf("watch from a too old RV: %v", err)
	}
}

func TestProtobufWrites(t *testing.T) {
	ctx := ctxT(t)
	f := newProtoAPI(t, 1)
	r := protoPods(t, f, nil)
	newPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	// Before the server has answered in protobuf, writes are JSON.
	if _, err := r.Create(ctx, newPod); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, "pod-0000"); err != nil {
		t.Fatal(err)
	}
	out, err := r.Create(ctx, newPod)
	if err != nil || out.ResourceVersion != "77" || out.Name != "new" {
		t.Fatalf("protobuf create: %v %+v", err, out)
	}
	if _, err := r.Update(ctx, newPod); err != nil {
		t.Fatal(err)
	}
	var cts []string
	for _, req := range f.seen() {
		if req.method != http.MethodGet {
			cts = append(cts, req.header.Get("Content-Type"))
		}
	}
	if want := []string{"application/json", runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf}; !reflect.DeepEqual(cts, want) {
		t.Fatalf("write Content-Types %q, want %q", cts, want)
	}
	// kube's decoder read the protobuf bodies as v1 Pods, equal to newPod.
	f.mu.Lock()
	wrote := f.wrote
	f.mu.Unlock()
	for _, obj := range wrote[1:] {
		p := obj.(*corev1.Pod)
		if gvk := p.GroupVersionKind(); gvk != corev1.SchemeGroupVersion.WithKind("Pod") {
			t.Fatalf("kube decoded kind %v", gvk)
		}
		p.TypeMeta = metav1.TypeMeta{}
		sameAsKube(t, p, newPod)
	}

	// A server that refuses protobuf bodies: the write is sent again as
	// JSON, and later writes are JSON.
	f2 := newProtoAPI(t, 1)
	f2.refuseProtobufBodies = true
	r2 := protoPods(t, f2, nil)
	if _, err := r2.Get(ctx, "pod-0000"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r2.Create(ctx, newPod); err != nil {
			t.Fatalf("create after 415: %v", err)
		}
	}
	cts = nil
	for _, req := range f2.seen() {
		if req.method != http.MethodGet {
			cts = append(cts, req.header.Get("Content-Type"))
		}
	}
	if want := []string{runtime.ContentTypeProtobuf, "application/json", "application/json"}; !reflect.DeepEqual(cts, want) {
		t.Fatalf("write Content-Types %q, want %q", cts, want)
	}
}

// TestProtobufFakeIsKube checks the fake against client-go: its typed
// clientset (which asks for protobuf) reads the same list and stream.
func TestProtobufFakeIsKube(t *testing.T) {
	f := newProtoAPI(t, 2)
	f.frames = [][]byte{kubeFrame(t, watch.Added, f.pods[0]), kubeFrame(t, watch.Deleted, f.pods[1])}
	srv := startTLS(t, f)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	l, err := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 2 {
		t.Fatalf("client-go list: %v", err)
	}
	w, err := cs.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var types []watch.EventType
	for ev := range w.ResultChan() {
		types = append(types, ev.Type)
	}
	if fmt.Sprint(types) != "[ADDED DELETED]" {
		t.Fatalf("client-go watch: %v", types)
	}
	if a := f.seen()[0].header.Get("Accept"); a != acceptProtobuf {
		t.Fatalf("client-go sent Accept %q, we send %q", a, acceptProtobuf)
	}
}

// TestProtobufListChunks: ListChunks hands over what List decodes, in
// order, in chunks of the size asked for, from a protobuf page and a JSON
// one alike, and returns the page's metadata; an error from the callee
// stops it and comes back as is.
func TestProtobufListChunks(t *testing.T) {
	f := newProtoAPI(t, 7)
	ctx := ctxT(t)
	for name, r := range map[string]*client.Resource[*corev1.Pod]{
		"protobuf": protoPods(t, f, nil),
		"json":     protoPods(t, f, func(c *client.Config) { c.DisableProtobuf = true }),
	} {
		whole, err := r.List(ctx, wire.ListOptions{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{1, 3, 7, 500} {
			var got []*corev1.Pod
			var sizes []int
			meta, err := r.ListChunks(ctx, wire.ListOptions{Limit: 2}, chunk, func(items []*corev1.Pod) error {
				sizes = append(sizes, len(items))
				got = append(got, items...)
				return nil
			})
			if err != nil {
				t.Fatalf("%s, chunk %d: %v", name, chunk, err)
			}
			if !reflect.DeepEqual(meta, whole.Metadata) {
				t.Fatalf("%s, chunk %d: metadata %+v, want %+v", name, chunk, meta, whole.Metadata)
			}
			sameAsKube(t, got, whole.Items)
			for i, n := range sizes {
				if n == 0 || n > chunk || (i < len(sizes)-1 && n != chunk) {
					t.Fatalf("%s, chunk %d: chunks of %v", name, chunk, sizes)
				}
			}
		}
		all := 0
		if _, err := r.ListChunks(ctx, wire.ListOptions{}, 2, func(items []*corev1.Pod) error {
			all += len(items)
			return nil
		}); err != nil || all != 7 {
			t.Fatalf("%s: unpaged: %d items, %v", name, all, err)
		}
		stop := errors.New("stop")
		calls := 0
		_, err = r.ListChunks(ctx, wire.ListOptions{}, 2, func([]*corev1.Pod) error {
			calls++
			return stop
		})
		if err != stop || calls != 1 {
			t.Fatalf("%s: callee's error: %v after %d calls, want it as is after 1", name, err, calls)
		}
	}
}
