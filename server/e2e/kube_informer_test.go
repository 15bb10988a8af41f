package e2e

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

var podsGVR = client.GroupVersionResource{Version: "v1", Resource: "pods"}
var configMapsGVR = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// next is the recorder's next event.
func (r *recorder[T]) next() string {
	r.t.Helper()
	select {
	case got := <-r.events:
		return got
	case <-time.After(30 * time.Second):
		r.t.Fatal("no event in 30s")
		return ""
	}
}

func kubePod(ns, name, app string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

// TestKubeInformerTypedPods runs a typed *corev1.Pod informer with a label
// selector and a small page size, then follows creates, updates, a label
// change out of the selection and a delete through the watch.
func TestKubeInformerTypedPods(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	c := kubeClient(t, s.AdminConfig())
	ns := kubeNamespace(t, c)
	ctx := t.Context()
	pods := client.NewResource[*corev1.Pod](c, podsGVR).Namespace(ns)
	for i := range 5 {
		if _, err := pods.Create(ctx, kubePod(ns, fmt.Sprintf("web-%d", i), "web")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if _, err := pods.Create(ctx, kubePod(ns, fmt.Sprintf("db-%d", i), "db")); err != nil {
			t.Fatal(err)
		}
	}
	// By default the first LIST asks for resourceVersion 0, which kube
	// answers from its watch cache in one page whatever the limit.
	_, _, defaults := syncWebPods(t, pods, ns, informer.ReflectorOptions{PageSize: 2})
	if n := defaults.lists.Load(); n != 1 {
		t.Errorf("%d LIST pages for 5 pods at limit 2 and resourceVersion 0, want kube's 1", n)
	}

	// A consistent first LIST is paged.
	inf, rec, counts := syncWebPods(t, pods, ns, informer.ReflectorOptions{PageSize: 2, ConsistentFirstList: true})
	t.Logf("initial sync: %d LIST page(s) of limit 2 for 5 pods", counts.lists.Load())
	if n := counts.lists.Load(); n < 3 {
		t.Errorf("%d LIST pages for 5 pods at limit 2, want >= 3", n)
	}

	created, err := pods.Create(ctx, kubePod(ns, "web-new", "web"))
	if err != nil {
		t.Fatal(err)
	}
	rec.expect("add " + ns + "/web-new")
	created.Spec.ActiveDeadlineSeconds = new(int64)
	*created.Spec.ActiveDeadlineSeconds = 600
	if _, err := pods.Update(ctx, created); err != nil {
		t.Fatal(err)
	}
	rec.expect("update " + ns + "/web-new")
	got, ok := inf.Lister().GetByKey(ns + "/web-new")
	if !ok || got.Spec.ActiveDeadlineSeconds == nil || *got.Spec.ActiveDeadlineSeconds != 600 {
		t.Fatalf("store has %+v", got)
	}
	if _, err := pods.Patch(ctx, "web-new", client.MergePatch, []byte(`{"metadata":{"labels":{"app":"db"}}}`)); err != nil {
		t.Fatal(err)
	}
	rec.expect("delete " + ns + "/web-new")
	if _, err := pods.Delete(ctx, "web-0", wire.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	// kube first sets deletionTimestamp (an update), then removes the pod.
	for ev := rec.next(); ev != "delete "+ns+"/web-0"; ev = rec.next() {
		if ev != "update "+ns+"/web-0" {
			t.Fatalf("event %q, want update or delete of web-0", ev)
		}
		t.Logf("kube sent %q before the delete", ev)
	}
	if n := len(inf.Lister().List()); n != 4 {
		t.Fatalf("store has %d pods, want 4", n)
	}
}

// syncWebPods runs an informer of the pods labelled app=web with ro,
// counting its LIST pages, until it has added web-0 to web-4.
func syncWebPods(t *testing.T, pods *client.Resource[*corev1.Pod], ns string, ro informer.ReflectorOptions) (*informer.Informer[*corev1.Pod], *recorder[*corev1.Pod], *reflectorCounts) {
	t.Helper()
	counts := newReflectorCounts()
	ro.Metrics = counts
	inf, err := informer.New(informer.NewListWatchFromClient[*corev1.Pod](pods, "app=web", ""),
		informer.Options[*corev1.Pod]{Reflector: ro})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder[*corev1.Pod](t)
	if _, err := inf.AddEventHandler(rec, informer.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	for i := range 5 {
		rec.expect(fmt.Sprintf("add %s/web-%d", ns, i))
	}
	return inf, rec, counts
}

// countListsAndStreams counts the LIST requests a client of cfg sends and
// its watches that stream the initial state (sendInitialEvents).
func countListsAndStreams(cfg *client.Config) (lists, streams *atomic.Int64) {
	lists, streams = new(atomic.Int64), new(atomic.Int64)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			q := r.URL.Query()
			switch {
			case q.Get("watch") == "" && r.Method == http.MethodGet:
				lists.Add(1)
			case q.Get("sendInitialEvents") == "true":
				streams.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	return lists, streams
}

// TestKubeInformerStreamingListUnstructured syncs an *object.Unstructured
// ConfigMap informer with a streaming initial list (sendInitialEvents),
// which kube-apiserver v1.37 serves: the informer must sync without any
// LIST request.
func TestKubeInformerStreamingListUnstructured(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	cfg := s.AdminConfig()
	lists, streams := countListsAndStreams(cfg)
	c := kubeClient(t, cfg)
	ns := kubeNamespace(t, c)
	ctx := t.Context()
	cms := client.NewResource[*object.Unstructured](c, configMapsGVR).Namespace(ns)
	for i := range 3 {
		if _, err := cms.Create(ctx, unstructuredCM(fmt.Sprintf("cm-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	lists.Store(0)
	inf, err := informer.New[*object.Unstructured](cms, informer.Options[*object.Unstructured]{
		Transform: informer.DropManagedFields,
		Reflector: informer.ReflectorOptions{StreamingList: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder[*object.Unstructured](t)
	inf.AddEventHandler(rec, informer.HandlerOptions{})
	runInformer(t, inf)
	// kube streams the initial events in its cache's order, not by name.
	initial := []string{rec.next(), rec.next(), rec.next()}
	if got := fmt.Sprint(sortStrings(initial)); got != fmt.Sprint([]string{"add " + ns + "/cm-0", "add " + ns + "/cm-1", "add " + ns + "/cm-2"}) {
		t.Fatalf("initial events %v", initial)
	}
	t.Logf("initial events in the order %v", initial)
	if lists.Load() != 0 || streams.Load() == 0 {
		t.Fatalf("%d LIST request(s), %d streaming watch(es): want 0 and >= 1", lists.Load(), streams.Load())
	}
	if _, err := cms.Delete(ctx, "cm-1", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.expect("delete " + ns + "/cm-1")
	got, ok := inf.Lister().GetByKey(ns + "/cm-0")
	if !ok {
		t.Fatal("cm-0 not in the store")
	}
	if mf, has := got.Nested("metadata", "managedFields"); has {
		t.Fatalf("managedFields kept: %v", mf)
	}
}

// TestKubeStreamingListWithoutWatchCache: kube serves sendInitialEvents
// from etcd too, for a resource without a watch cache.
func TestKubeStreamingListWithoutWatchCache(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	cfg := s.AdminConfig()
	lists, streams := countListsAndStreams(cfg)
	c := kubeClient(t, cfg)
	ns := kubeNamespace(t, c)
	pts := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: kubeUncachedResource}).Namespace(ns)
	pt := &object.Unstructured{}
	if err := pt.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"one"},
		"template":{"spec":{"containers":[{"name":"c","image":"nginx"}]}}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := pts.Create(t.Context(), pt); err != nil {
		t.Fatal(err)
	}
	inf, err := informer.New[*object.Unstructured](pts, informer.Options[*object.Unstructured]{
		Reflector: informer.ReflectorOptions{StreamingList: true}})
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	if _, ok := inf.Lister().GetByKey(ns + "/one"); !ok || lists.Load() != 0 || streams.Load() == 0 {
		t.Fatalf("synced %v with %d LIST(s) and %d streaming watch(es): want 0 and >= 1", ok, lists.Load(), streams.Load())
	}
}

// TestKubeWatchBookmarks reads a raw watch with sendInitialEvents: the
// existing objects as ADDED, then the BOOKMARK that ends the initial
// events, annotated k8s.io/initial-events-end, at the list's revision.
func TestKubeWatchBookmarks(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	c := kubeClient(t, s.AdminConfig())
	ns := kubeNamespace(t, c)
	ctx := t.Context()
	cms := client.NewResource[*object.Unstructured](c, configMapsGVR).Namespace(ns)
	var last string
	for i := range 2 {
		cm, err := cms.Create(ctx, unstructuredCM(fmt.Sprintf("b-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		last = cm.GetResourceVersion()
	}
	yes := true
	w, err := cms.Watch(ctx, wire.ListOptions{AllowWatchBookmarks: true, SendInitialEvents: &yes, ResourceVersionMatch: "NotOlderThan"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var added []string
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == wire.Added {
			added = append(added, ev.Object.GetName())
			continue
		}
		if ev.Type != wire.Bookmark {
			t.Fatalf("event %s before the bookmark", ev.Type)
		}
		if ev.Object.GetAnnotations()[wire.AnnotationInitialEventsEnd] != "true" {
			t.Fatalf("bookmark without %s: %v", wire.AnnotationInitialEventsEnd, ev.Object.GetAnnotations())
		}
		if rv := ev.Object.GetResourceVersion(); rv < last || len(rv) < len(last) {
			t.Fatalf("bookmark at %s, before the last write %s", rv, last)
		}
		break
	}
	if fmt.Sprint(sortStrings(added)) != "[b-0 b-1]" {
		t.Fatalf("initial events %v", added)
	}
	// After the bookmark, live events.
	if _, err := cms.Create(ctx, unstructuredCM("b-2")); err != nil {
		t.Fatal(err)
	}
	ev, err := w.Next()
	if err != nil || ev.Type != wire.Added || ev.Object.GetName() != "b-2" {
		t.Fatalf("event %v %v, want ADDED b-2", ev.Type, err)
	}
}

// TestKubeRelistAfterCompaction: a resource without a watch cache
// (kubeUncachedResource) is watched straight from etcd. The informer's
// watches end every few seconds; between two of them the test compacts
// etcd past the informer's resourceVersion, so the next watch is told 410
// Expired and the informer must relist and converge, deletions included.
func TestKubeRelistAfterCompaction(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	c := kubeClient(t, s.AdminConfig())
	ns := kubeNamespace(t, c)
	ctx := t.Context()
	gvr := client.GroupVersionResource{Version: "v1", Resource: kubeUncachedResource}
	pts := client.NewResource[*object.Unstructured](c, gvr).Namespace(ns)
	create := func(name string) {
		t.Helper()
		pt := &object.Unstructured{}
		if err := pt.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"` + name + `"},
			"template":{"spec":{"containers":[{"name":"c","image":"nginx"}]}}}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := pts.Create(ctx, pt); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		create(fmt.Sprintf("pt-%d", i))
	}
	counts := newReflectorCounts()
	// Pause the watches: while paused, a watch request waits here, so the
	// compaction lands between two watches deterministically.
	gate := make(chan struct{})
	close(gate)
	var gateMu atomic.Pointer[chan struct{}]
	gateMu.Store(&gate)
	cfg := s.AdminConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Query().Get("watch") == "true" {
				select {
				case <-*gateMu.Load():
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return rt.RoundTrip(r)
		})
	}
	wc := kubeClient(t, cfg)
	inf, err := informer.New[*object.Unstructured](client.NewResource[*object.Unstructured](wc, gvr).Namespace(ns),
		informer.Options[*object.Unstructured]{Reflector: informer.ReflectorOptions{
			// Watches end after 2–4s (timeoutSeconds), so the test can
			// hold the next one.
			Metrics: counts, MinWatchTimeout: 2 * time.Second,
			Backoff: informer.BackoffOptions{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
		}})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1000)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	inf.AddEventHandler(informer.HandlerFuncs[*object.Unstructured]{
		AddFunc:    func(*object.Unstructured, bool) { poke() },
		UpdateFunc: func(_, _ *object.Unstructured) { poke() },
		DeleteFunc: func(*object.Unstructured, bool) { poke() },
	}, informer.HandlerOptions{})
	runInformer(t, inf)

	// Hold the next watch, change state and compact behind it.
	paused := make(chan struct{})
	gateMu.Store(&paused)
	watchesBefore := counts.watches.Load()
	deadline := time.Now().Add(30 * time.Second)
	for counts.watches.Load() == watchesBefore { // the current watch ends within ~2s
		if time.Now().After(deadline) {
			t.Fatal("the informer's watch did not end")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	if _, err := pts.Delete(ctx, "pt-1", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create("pt-new")
	rev, err := s.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted etcd at revision %d", rev)
	close(paused)

	for expired := false; !expired; {
		select {
		case r := <-counts.relisted:
			expired = r == informer.RelistExpired
			if !expired {
				t.Logf("relisted for %q", r)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no relist for %q after compaction", informer.RelistExpired)
		}
	}
	want := fmt.Sprint([]string{ns + "/pt-0", ns + "/pt-2", ns + "/pt-new"})
	have := func() string {
		var keys []string
		for _, o := range inf.Lister().List() {
			keys = append(keys, object.Key(o))
		}
		return fmt.Sprint(sortStrings(keys))
	}
	waitFor(t, changed, func() bool { return have() == want })
}

// TestKubeListAllPaging lists 25 ConfigMaps with ListAll at limit 10: the
// server must cut pages (kube honours limit for a consistent list) and
// ListAll must follow the continue tokens to all 25.
func TestKubeListAllPaging(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	cfg := s.AdminConfig()
	var pages atomic.Int64
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && r.URL.Query().Get("limit") == "10" {
				pages.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	c := kubeClient(t, cfg)
	ns := kubeNamespace(t, c)
	ctx := t.Context()
	cms := client.NewResource[*object.Unstructured](c, configMapsGVR).Namespace(ns)
	for i := range 25 {
		if _, err := cms.Create(ctx, unstructuredCM(fmt.Sprintf("p-%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	l, err := cms.ListAll(ctx, wire.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 25 || pages.Load() != 3 {
		t.Fatalf("%d items in %d pages, want 25 in 3", len(l.Items), pages.Load())
	}
	for i, it := range l.Items {
		if want := fmt.Sprintf("p-%02d", i); it.GetName() != want {
			t.Fatalf("item %d is %s, want %s", i, it.GetName(), want)
		}
	}
	if l.Metadata.Continue != "" || l.Metadata.ResourceVersion == "" {
		t.Fatalf("list metadata %+v", l.Metadata)
	}
	one, err := cms.List(ctx, wire.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Items) != 10 || one.Metadata.Continue == "" || one.Metadata.RemainingItemCount == nil || *one.Metadata.RemainingItemCount != 15 {
		t.Fatalf("first page: %d items, continue %q, remaining %v", len(one.Items), one.Metadata.Continue, one.Metadata.RemainingItemCount)
	}
	// resourceVersion "0" is served from kube's watch cache, which ignores
	// limit: one page with everything, and ListAll stops there.
	pages.Store(0)
	l, err = cms.ListAll(ctx, wire.ListOptions{Limit: 10, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 25 || pages.Load() != 1 {
		t.Fatalf("rv=0: %d items in %d pages, want 25 in 1 (kube ignores limit)", len(l.Items), pages.Load())
	}
}
