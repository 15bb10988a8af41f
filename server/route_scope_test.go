package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
	"github.com/listwatch/listwatch/wire"
)

// crdDef is a CRD of example.com with a status subresource.
func crdDef(plural, kind, scope string) map[string]any {
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": scope,
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}
}

// scopeCRDs are served besides the built-ins in the scope tests: a
// namespaced and a cluster-scoped CRD, and a cluster-scoped one whose
// plural is "namespaces" (whose /namespaces/{x} is not a namespace).
var scopeCRDs = []map[string]any{
	crdDef("widgets", "Widget", "Namespaced"),
	crdDef("gadgets", "Gadget", "Cluster"),
	crdDef("namespaces", "Space", "Cluster"),
}

// recordingStore notes every key and prefix the server reads or writes.
type recordingStore struct {
	storage.Interface
	mu   sync.Mutex
	keys []string // guarded by mu
}

func (s *recordingStore) note(k string) {
	s.mu.Lock()
	s.keys = append(s.keys, k)
	s.mu.Unlock()
}

// take returns the keys noted since the last take.
func (s *recordingStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys
	s.keys = nil
	return k
}

func (s *recordingStore) Get(ctx context.Context, key string) (storage.KV, error) {
	s.note(key)
	return s.Interface.Get(ctx, key)
}

func (s *recordingStore) List(ctx context.Context, prefix string, o storage.ListOptions) (storage.ListResult, error) {
	s.note(prefix)
	return s.Interface.List(ctx, prefix, o)
}

func (s *recordingStore) Create(ctx context.Context, key string, v []byte) (int64, error) {
	s.note(key)
	return s.Interface.Create(ctx, key, v)
}

func (s *recordingStore) Update(ctx context.Context, key string, v []byte, rev int64) (int64, error) {
	s.note(key)
	return s.Interface.Update(ctx, key, v, rev)
}

func (s *recordingStore) Delete(ctx context.Context, key string, rev int64) (storage.KV, error) {
	s.note(key)
	return s.Interface.Delete(ctx, key, rev)
}

func (s *recordingStore) Watch(ctx context.Context, prefix string, from int64, progress bool, opts ...storage.WatchOption) (storage.Watcher, error) {
	s.note(prefix)
	return s.Interface.Watch(ctx, prefix, from, progress, opts...)
}

// actedNamespace is the namespace a storage key or prefix is in: "" for
// all namespaces or none; for a namespace object, the namespace itself.
func actedNamespace(t *testing.T, all []*resource, key string) string {
	t.Helper()
	var best *resource
	for _, r := range all {
		if strings.HasPrefix(key, r.prefix("")) && (best == nil || len(r.prefix("")) > len(best.prefix(""))) {
			best = r
		}
	}
	if best == nil {
		t.Fatalf("key %q of no served resource", key)
	}
	rest := strings.TrimPrefix(key, best.prefix(""))
	switch {
	case best.namespaced:
		ns, _, _ := strings.Cut(rest, "/")
		return ns
	case best.group == "" && best.plural == "namespaces":
		return strings.TrimSuffix(rest, "/")
	}
	return ""
}

// TestRouteNamespaceProperty sends every verb to every served resource,
// built-in or custom, with and without a namespace segment (and with an
// empty one, namespaces//), by name and
// by collection, on the status subresource and on /watch/ paths, through
// the request-info and scope filters as the apiserver chains them, and
// checks what the server then reads or writes in storage: whenever the
// request info (what an authorizer judges) has a namespace, nothing
// outside it is touched; and a cluster-scoped resource under a namespace
// is a 404 that touches nothing.
func TestRouteNamespaceProperty(t *testing.T) {
	et := etcdtest.Start(t)
	rec := &recordingStore{Interface: et.Store}
	e := startEnv(t, rec, et)
	for _, ns := range []string{"team-a", "victim"} {
		e.must(201, "POST", "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": ns}})
	}
	for _, crd := range scopeCRDs {
		e.must(201, "POST", crdPath, crd)
	}
	all := e.srv.reg.all()
	for _, r := range all {
		obj := map[string]any{"apiVersion": r.apiVersion(), "kind": r.kind, "metadata": map[string]any{"name": "victim"}}
		if r.plural == "namespaces" && r.group == "" || r.plural == "customresourcedefinitions" {
			continue
		}
		for _, ns := range []string{"team-a", "victim"} {
			p := "/api/" + r.version
			if r.group != "" {
				p = "/apis/" + r.group + "/" + r.version
			}
			if r.namespaced {
				p += "/namespaces/" + ns
			}
			e.do("POST", p+"/"+r.plural, obj)
		}
	}

	var inflight sync.WaitGroup
	chain := request.WithRequestInfo(request.WithScope(e.srv)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Done()
		e.srv.Handler().ServeHTTP(w, r)
	})))
	hs := httptest.NewServer(chain)
	defer hs.Close()
	rec.take()

	type verb struct{ method, watchPath, query string }
	verbs := []verb{{"GET", "", ""}, {"GET", "", "?watch=1"}, {"GET", "watch/", ""}, {"POST", "", ""}, {"PUT", "", ""}, {"PATCH", "", ""}, {"DELETE", "", ""}}
	served := 0
	for _, r := range all {
		root := "/api/" + r.version + "/"
		if r.group != "" {
			root = "/apis/" + r.group + "/" + r.version + "/"
		}
		for _, nsSeg := range []string{"", "namespaces/team-a/", "namespaces//"} {
			for _, tail := range []string{"", "/victim", "/victim/status"} {
				for _, v := range verbs {
					target := root + v.watchPath + nsSeg + r.plural + tail + v.query
					code, body := sendOne(t, hs.URL, v.method, target, r)
					inflight.Wait()
					var keys []string
					for _, k := range rec.take() {
						// The CRDs' group versions are registered as
						// APIServices by a loop of the server's own,
						// which may write while a request runs.
						if strings.HasPrefix(k, "/registry/apiregistration.k8s.io/apiservices/") && r.plural != "apiservices" {
							continue
						}
						keys = append(keys, k)
					}
					info, err := request.Parse(httptest.NewRequest(v.method, target, nil))
					if err != nil {
						t.Fatalf("%s %s: %v", v.method, target, err)
					}
					if !info.Routable(r.scope()) {
						// kube's 404 for no route: a Status under its
						// built-in API, Go's plain one for a custom
						// resource's group.
						var st wire.Status
						_ = json.Unmarshal(body, &st)
						status := st.Reason == wire.ReasonNotFound && st.Message == "the server could not find the requested resource"
						plain := string(body) == "404 page not found\n"
						if code != 404 || (r.crd == "" && !status) || (r.crd != "" && !plain) || len(keys) > 0 {
							t.Errorf("%s %s: cluster-scoped under a namespace answered %d %s, touched %q", v.method, target, code, body, keys)
						}
						continue
					}
					if len(keys) > 0 {
						served++
					}
					for _, k := range keys {
						acted := actedNamespace(t, all, k)
						if r.group == "" && r.plural == "namespaces" && acted == "" && info.Verb == "watch" && info.Name != "" {
							// A watch by name reads the collection
							// for that one name (kube's field
							// selector metadata.name).
							acted = info.Name
						}
						if info.Namespace != "" && acted != info.Namespace {
							t.Errorf("%s %s: authorized in namespace %q, acted on %q (key %s); answered %d %s",
								v.method, target, info.Namespace, acted, k, code, body)
						}
					}
					if info.Verb == "deletecollection" && info.UnderNamespace && slices.Equal(keys, []string{r.prefix("")}) {
						// An empty namespace's (namespaces//): the
						// list across namespaces kube's DeleteCollection
						// reads before its Delete of the first object
						// refuses the namespace (keyError); no write.
						keys = nil
					}
					if r.namespaced && info.Namespace == "" && info.Verb != "list" && info.Verb != "watch" && len(keys) > 0 {
						t.Errorf("%s %s: %s of a namespaced resource across namespaces touched %q", v.method, target, info.Verb, keys)
					}
				}
			}
		}
	}
	if served < 100 {
		t.Fatalf("only %d requests reached storage: the test tests nothing", served)
	}
}

// sendOne sends one request with a body fitting r; a watch is ended as
// soon as its headers arrive.
func sendOne(t *testing.T, base, method, target string, r *resource) (int, []byte) {
	t.Helper()
	var body string
	ct := "application/json"
	switch method {
	case "POST", "PUT":
		b, _ := json.Marshal(map[string]any{"apiVersion": r.apiVersion(), "kind": r.kind,
			"metadata": map[string]any{"name": "victim"}, "status": map[string]any{"phase": "Changed"}})
		body = string(b)
	case "PATCH":
		body, ct = `{"metadata":{"labels":{"changed":"yes"}}}`, "application/merge-patch+json"
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	if strings.Contains(target, "watch") && resp.StatusCode == 200 {
		return resp.StatusCode, nil
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, []byte(b.String())
}

// FuzzRouteTarget: for any request, the namespace the router would act in
// is the one in the request info whenever that has one, and a
// cluster-scoped resource is acted on only outside namespaces (or is the
// namespace the path names).
func FuzzRouteTarget(f *testing.F) {
	s, err := New(Config{Store: &recordingStore{}, Reader: direct.New(nil)})
	if err != nil {
		f.Fatal(err)
	}
	for _, crd := range scopeCRDs {
		b, _ := json.Marshal(crd)
		name, rev, rs, err := crdResources(b)
		if err != nil {
			f.Fatal(err)
		}
		if err := s.reg.setCRD(name, rev, rs); err != nil {
			f.Fatal(err)
		}
	}
	for _, r := range s.reg.all() {
		for _, p := range []string{"namespaces/a/%s/b", "%s/a", "namespaces/a/%s", "watch/namespaces/a/%s/b", "namespaces/a/%s/a/status", "namespaces//%s/b"} {
			root := "/api/" + r.version + "/"
			if r.group != "" {
				root = "/apis/" + r.group + "/" + r.version + "/"
			}
			f.Add("GET", root+fmt.Sprintf(p, r.plural))
		}
	}
	f.Add("DELETE", "/api/v1/namespaces/a/namespaces/b")
	f.Add("PUT", "/api/v1/namespaces/a/status")
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := http.NewRequest(method, "http://h"+target, nil)
		if err != nil {
			return
		}
		info, err := request.Parse(r)
		if err != nil || !info.IsResourceRequest {
			return
		}
		res, ns, _, err := s.target(info, method)
		if err != nil {
			return
		}
		switch {
		case res.namespaced && ns != info.Namespace:
			t.Fatalf("%s %s: acts in namespace %q, authorized in %q", method, target, ns, info.Namespace)
		// An empty namespace segment (namespaces//) is routed as kube's,
		// its handlers refusing the missing namespace where they build a
		// key (keyError; TestRouteNamespaceProperty checks that nothing
		// is written).
		case res.namespaced && ns == "" && !slices.Contains([]string{"list", "watch"}, info.Verb) && !info.UnderNamespace:
			t.Fatalf("%s %s: %s across namespaces", method, target, info.Verb)
		case !res.namespaced && ns != "":
			t.Fatalf("%s %s: cluster-scoped %s in namespace %q", method, target, res.plural, ns)
		case !res.namespaced && info.Namespace != "" && (res.group != "" || res.plural != "namespaces" || info.Name != info.Namespace):
			t.Fatalf("%s %s: cluster-scoped %s served though authorized in namespace %q", method, target, res.gr(), info.Namespace)
		}
	})
}
