package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/storage/etcd"
)

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestClientGoReflectorRelistsAfter410 runs client-go's reflector (through
// a dynamic informer) across a compaction and a server restart. After the
// restart its watch resumes from a resourceVersion older than the new
// watch cache's history, gets 410 Expired, relists and must converge on the
// server's state, deletions made while it was away included.
func TestClientGoReflectorRelistsAfter410(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	withPort := func(o *apiserver.Options) { o.Port = port }
	s := startServer(t, dir, withPort)
	cfg := restConfig(t, s)
	var lists atomic.Int64
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			// A list is a plain GET, or a watch that streams the initial
			// state (client-go v0.37's default).
			q := r.URL.Query()
			if r.Method == "GET" && (q.Get("watch") == "" || q.Get("sendInitialEvents") == "true") {
				lists.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cms := dyn.Resource(gvr).Namespace("default")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for i := range 10 {
		if _, err := cms.Create(ctx, cmObject(fmt.Sprintf("r-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, "default", nil)
	inf := factory.ForResource(gvr).Informer()
	var mu sync.Mutex
	seen := map[string]bool{}
	changed := make(chan struct{}, 1000)
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			mu.Lock()
			seen[o.(*unstructured.Unstructured).GetName()] = true
			mu.Unlock()
			changed <- struct{}{}
		},
		UpdateFunc: func(_, o any) { changed <- struct{}{} },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			mu.Lock()
			delete(seen, o.(*unstructured.Unstructured).GetName())
			mu.Unlock()
			changed <- struct{}{}
		},
	})
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("no sync")
	}

	// Compact etcd to the current revision while the informer watches.
	rev, err := s.Store().CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store().Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, cmObject("after-compaction"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { mu.Lock(); defer mu.Unlock(); return seen["after-compaction"] })

	// Stop the server and change state behind its back, straight in etcd
	// (as another replica would): delete two objects, add one, compact.
	// The restarted server's watch cache starts after all of it, so the
	// informer's resumed watch is older than the cache's history: 410.
	s.Stop()
	emb, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: dir + "/etcd"})
	if err != nil {
		t.Fatal(err)
	}
	st := etcd.New(emb.Client())
	for _, n := range []string{"r-1", "r-2"} {
		if _, err := st.Delete(ctx, "/registry/configmaps/default/"+n, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Create(ctx, "/registry/configmaps/default/while-away",
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"while-away","namespace":"default","uid":"6a1f0c1e-0000-4000-8000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z"}}`)); err != nil {
		t.Fatal(err)
	}
	if rev, err = st.CurrentRevision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	emb.Close()
	listsBefore := lists.Load()
	s2 := startServer(t, dir, withPort)
	cms2 := dynamic.NewForConfigOrDie(restConfig(t, s2)).Resource(gvr).Namespace("default")

	want := func() string {
		l, err := cms2.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, it := range l.Items {
			names = append(names, it.GetName()+"@"+it.GetResourceVersion())
		}
		return strings.Join(names, ",")
	}()
	have := func() string {
		var names []string
		for _, k := range inf.GetStore().ListKeys() {
			o, _, _ := inf.GetStore().GetByKey(k)
			u := o.(*unstructured.Unstructured)
			names = append(names, u.GetName()+"@"+u.GetResourceVersion())
		}
		return strings.Join(sortStrings(names), ",")
	}
	waitFor(t, changed, func() bool { return have() == want })
	if lists.Load() == listsBefore {
		t.Fatal("converged without relisting: the 410 path was not exercised")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// waitFor blocks until cond holds, re-checking whenever changed fires, for
// at most 60 seconds.
func waitFor(t testing.TB, changed <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !cond() {
		select {
		case <-changed:
		case <-time.After(500 * time.Millisecond):
		case <-deadline:
			t.Fatal("condition not reached in 60s")
		}
	}
}
