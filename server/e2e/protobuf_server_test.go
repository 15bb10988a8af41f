package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"

	"github.com/listwatch/listwatch/server/apiserver"
)

const (
	ctProto      = "application/vnd.kubernetes.protobuf"
	ctProtoWatch = "application/vnd.kubernetes.protobuf;stream=watch"
)

// contentTypes records the Content-Type of every response client-go reads.
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]int
	rt   http.RoundTripper
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		c.seen[resp.Header.Get("Content-Type")]++
		c.mu.Unlock()
	}
	return resp, err
}

func (c *contentTypes) count(ct string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[ct]
}

// protoClient is client-go's typed clientset with its defaults (protobuf
// for built-in kinds), recording response content types.
func protoClient(t *testing.T, s *testServer) (*kubernetes.Clientset, *contentTypes) {
	t.Helper()
	cfg := restConfig(t, s)
	if cfg.ContentType != "" || cfg.AcceptContentTypes != "" {
		t.Fatalf("config sets content types: %q %q", cfg.ContentType, cfg.AcceptContentTypes)
	}
	ct := &contentTypes{seen: map[string]int{}}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { ct.rt = rt; return ct }
	return kubernetes.NewForConfigOrDie(cfg), ct
}

// TestProtobufClientGo drives every verb with client-go's default typed
// client, which asks for protobuf, with and without the watch cache, and
// checks that the answers were protobuf and decoded to the right objects
// and errors.
func TestProtobufClientGo(t *testing.T) {
	t.Parallel()
	for _, noCache := range []bool{false, true} {
		t.Run(fmt.Sprintf("noCache=%v", noCache), func(t *testing.T) {
			s := startServer(t, "", func(o *apiserver.Options) { o.DisableWatchCache = noCache })
			cs, ct := protoClient(t, s)
			ctx := t.Context()
			cms := cs.CoreV1().ConfigMaps("default")

			for i := range 5 {
				c, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm", i),
					Labels: map[string]string{"i": fmt.Sprint(i)}}, Data: map[string]string{"k": fmt.Sprint(i)}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if c.Name != fmt.Sprint("cm", i) || c.UID == "" || c.ResourceVersion == "" || c.Data["k"] != fmt.Sprint(i) {
					t.Fatalf("created: %+v", c)
				}
			}
			if ct.count(ctProto) != 5 {
				t.Fatalf("creates answered %v", ct.seen)
			}
			got, err := cms.Get(ctx, "cm1", metav1.GetOptions{})
			if err != nil || got.Data["k"] != "1" || got.Labels["i"] != "1" {
				t.Fatalf("get: %v %+v", err, got)
			}
			got.Data["k"] = "one"
			upd, err := cms.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil || upd.Data["k"] != "one" || upd.ResourceVersion == got.ResourceVersion {
				t.Fatalf("update: %v %+v", err, upd)
			}

			// Errors: decoded from the protobuf Status, not made up from
			// the status code.
			before := ct.count(ctProto)
			_, err = cms.Get(ctx, "nope", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) || err.Error() != `configmaps "nope" not found` {
				t.Fatalf("get missing: %v", err)
			}
			_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
			if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the object has been modified") {
				t.Fatalf("stale update: %v", err)
			}
			dup := upd.DeepCopy()
			dup.ResourceVersion = "" // with one, kube's storage answers its 500 first
			_, err = cms.Create(ctx, dup, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) || err.Error() != `configmaps "cm1" already exists` {
				t.Fatalf("duplicate create: %v", err)
			}
			if n := ct.count(ctProto) - before; n != 3 {
				t.Fatalf("%d of 3 errors were protobuf: %v", n, ct.seen)
			}

			// Paged list.
			var names []string
			p := pager.New(func(ctx2 context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx2, o) })
			p.PageSize = 2
			if err := p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
				names = append(names, o.(*corev1.ConfigMap).Name)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names, []string{"cm0", "cm1", "cm2", "cm3", "cm4"}) {
				t.Fatalf("paged list: %v", names)
			}
			l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "i in (1,3)", ResourceVersion: "0"})
			if err != nil || len(l.Items) != 2 || l.Items[0].Data["k"] != "one" || l.ResourceVersion == "" {
				t.Fatalf("list rv=0: %v %+v", err, l)
			}

			// Streaming initial events, then changes, then a delete.
			w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr(true), AllowWatchBookmarks: true,
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var initial []string
			for len(initial) < 6 {
				ev := next(t, w)
				switch {
				case ev.Type == watch.Added:
					initial = append(initial, ev.Object.(*corev1.ConfigMap).Name)
				case ev.Type == watch.Bookmark:
					cm := ev.Object.(*corev1.ConfigMap)
					if cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || cm.ResourceVersion == "" {
						t.Fatalf("bookmark: %+v", cm.ObjectMeta)
					}
					initial = append(initial, "BOOKMARK")
				default:
					t.Fatalf("initial event %v", ev.Type)
				}
			}
			if initial[5] != "BOOKMARK" {
				t.Fatalf("initial events: %v", initial)
			}
			if err := cms.Delete(ctx, "cm2", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			for {
				ev := next(t, w)
				if ev.Type == watch.Bookmark {
					continue
				}
				cm := ev.Object.(*corev1.ConfigMap)
				if ev.Type != watch.Deleted || cm.Name != "cm2" || cm.Data["k"] != "2" {
					t.Fatalf("after delete: %v %+v", ev.Type, cm)
				}
				break
			}
			if ct.count(ctProtoWatch) != 1 {
				t.Fatalf("watch answered %v", ct.seen)
			}

			// Delete with a failing precondition: a Conflict.
			err = cms.Delete(ctx, "cm3", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr(types.UID("x"))}})
			if !apierrors.IsConflict(err) {
				t.Fatalf("delete with a wrong uid: %v", err)
			}

			// The default typed informer (its initial list streamed, as
			// WatchListClient is on by default) syncs.
			f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
			inf := f.Core().V1().ConfigMaps().Informer()
			syncCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
			f.Start(syncCtx.Done())
			defer f.Shutdown()
			defer cancel() // before Shutdown, which waits for the informers
			if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
				t.Fatal("informer did not sync")
			}
			if keys := inf.GetStore().ListKeys(); len(keys) != 4 {
				t.Fatalf("informer has %v", keys)
			}
			for k := range ct.seen {
				if k != ctProto && k != ctProtoWatch {
					t.Errorf("a response was %q", k)
				}
			}
		})
	}
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", apierrors.FromObject(ev.Object))
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event in 30s")
	}
	return watch.Event{}
}

func ptr[T any](v T) *T { return &v }

// TestProtobufListBytes: a protobuf LIST page is byte for byte what
// apimachinery's protobuf serializer writes for the same list decoded from
// the JSON answer at the same resourceVersion, from the watch cache (twice:
// the second from the cached item bytes) and from etcd.
func TestProtobufListBytes(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()
	for i := range 4 {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("b", i), Labels: map[string]string{"x": "y"}, Annotations: map[string]string{"a": "b", "c": "d"}},
			Data:       map[string]string{"z": "1", "a": "2"}, BinaryData: map[string][]byte{"bin": {0, 1, 2}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	rc := cs.CoreV1().RESTClient().(*rest.RESTClient)
	first, err := rc.Get().Namespace("default").Resource("configmaps").Param("limit", "3").SetHeader("Accept", ctProto).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	codec := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	obj, _, err := codec.Decode(first, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	page := obj.(*corev1.ConfigMapList)
	if len(page.Items) != 3 || page.Continue == "" || page.RemainingItemCount == nil || *page.RemainingItemCount != 1 {
		t.Fatalf("page: %+v", page.ListMeta)
	}
	rv := page.ResourceVersion
	for _, q := range []map[string]string{
		{"limit": "3"}, // the watch cache, its memo already built
		{"limit": "3", "resourceVersion": rv, "resourceVersionMatch": "Exact"},
		{"continue": page.Continue},
	} {
		get := func(accept string) []byte {
			r := rc.Get().Namespace("default").Resource("configmaps").SetHeader("Accept", accept)
			for k, v := range q {
				r = r.Param(k, v)
			}
			b, err := r.DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		// The first form lists at the latest revision: its two GETs may
		// straddle a write elsewhere (the server's identity Lease is
		// renewed every 10 s), and are sent again then.
		for try := 0; ; try++ {
			pb, js := get(ctProto), get("application/json")
			var want corev1.ConfigMapList
			if err := runtime.DecodeInto(scheme.Codecs.UniversalDecoder(corev1.SchemeGroupVersion), js, &want); err != nil {
				t.Fatal(err)
			}
			want.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}
			var buf bytes.Buffer
			if err := codec.Encode(&want, &buf); err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(pb, buf.Bytes()) {
				break
			}
			if try == 2 || q["resourceVersion"] != "" || q["continue"] != "" {
				t.Fatalf("%v: protobuf list differs from apimachinery's:\n got %q\nwant %q", q, pb, buf.Bytes())
			}
		}
	}
	// DELETE of the collection answers the deleted objects' list.
	b, err := rc.Delete().Namespace("default").Resource("configmaps").SetHeader("Accept", ctProto+", application/json").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if obj, _, err = codec.Decode(b, nil, nil); err != nil || len(obj.(*corev1.ConfigMapList).Items) != 4 {
		t.Fatalf("deletecollection: %v %+v", err, obj)
	}
}

// TestProtobufMetadataClient: client-go's metadata client asks for
// PartialObjectMetadata(List) in protobuf first; get, list and watch
// answer it so.
func TestProtobufMetadataClient(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cfg := restConfig(t, s)
	ct := &contentTypes{seen: map[string]int{}}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { ct.rt = rt; return ct }
	mc := metadata.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "m",
		Labels: map[string]string{"a": "b"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := mc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace("default")
	got, err := cms.Get(ctx, "m", metav1.GetOptions{})
	if err != nil || got.Name != "m" || got.Labels["a"] != "b" {
		t.Fatalf("get: %v %+v", err, got)
	}
	l, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "m" || l.ResourceVersion == "" {
		t.Fatalf("list: %v %+v", err, l)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "m", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := next(t, w)
	if pm, ok := ev.Object.(*metav1.PartialObjectMetadata); !ok || ev.Type != watch.Deleted || pm.Name != "m" {
		t.Fatalf("event %v %#v", ev.Type, ev.Object)
	}
	if ct.count(ctProto) != 2 || ct.count(ctProtoWatch) != 1 {
		t.Fatalf("responses %v", ct.seen)
	}
}
