package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// labelHook is a mutating admission webhook that labels what it is sent
// (mutated=yes) and counts its calls by the object's generateName.
type labelHook struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func (h *labelHook) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	var obj struct {
		Metadata struct {
			GenerateName string            `json:"generateName"`
			Labels       map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(review.Request.Object.Raw, &obj)
	h.mu.Lock()
	h.calls[obj.Metadata.GenerateName]++
	h.mu.Unlock()
	ops := []map[string]any{{"op": "add", "path": "/metadata/labels", "value": map[string]string{"mutated": "yes"}}}
	if obj.Metadata.GenerateName == "named-" { // the hook names it
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/name", "value": "named-by-hook"})
	}
	patch, _ := json.Marshal(ops)
	pt := admissionv1.PatchTypeJSONPatch
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, Patch: patch, PatchType: &pt}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

func (h *labelHook) count(generateName string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[generateName]
}

// startEnvWithWebhooks is startEnv with the admission webhooks enabled,
// their informers reading the server over its own HTTP listener, and
// names drawn by gen.
func startEnvWithWebhooks(t *testing.T, gen func(string) string) *env {
	t.Helper()
	et := etcdtest.Start(t)
	reader := direct.New(et.Store)
	srv, err := New(Config{Store: et.Store, Reader: reader, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), generateName: gen})
	if err != nil {
		t.Fatal(err)
	}
	// Every request as an administrator: the webhooks' admission reviews
	// name the user.
	admin := &request.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	inner := request.WithRequestInfo(srv.Handler())
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), admin)))
	}))
	cfg := &rest.Config{Host: hs.URL}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := srv.EnableWebhooks(cs, dyn, nil, AdmissionPlugins{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{reader.Run, srv.Run, hooks.Run} {
		wg.Go(func() { _ = run(ctx) })
	}
	e := &env{t: t, etcd: et, srv: srv, http: hs, url: hs.URL, store: et.Store}
	e.stop = func() {
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		wg.Wait()
		cs.CoreV1().RESTClient().(*rest.RESTClient).Client.CloseIdleConnections()
	}
	t.Cleanup(e.stop)
	select {
	case <-srv.booted:
	case <-time.After(30 * time.Second):
		t.Fatal("server did not boot")
	}
	return e
}

// TestGenerateNameRetryAdmitsOnce: a create whose generated name exists
// is tried again under another name from the object as mutating
// admission left it, as kube's store retries after its handler admitted:
// the webhook is called once, and its change is kept.
func TestGenerateNameRetryAdmitsOnce(t *testing.T) {
	var mu sync.Mutex
	next := map[string][]string{}
	e := startEnvWithWebhooks(t, func(base string) string {
		mu.Lock()
		defer mu.Unlock()
		if len(next[base]) == 0 {
			return base + "free"
		}
		name := next[base][0]
		next[base] = next[base][1:]
		return base + name
	})
	h := &labelHook{calls: map[string]int{}}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw}))
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	e.must(201, "POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", `{
		"metadata":{"name":"label"},
		"webhooks":[{"name":"label.example.com","admissionReviewVersions":["v1"],"sideEffects":"None",
			"clientConfig":{"url":"`+h.srv.URL+`/label","caBundle":"`+ca+`"},
			"rules":[{"operations":["CREATE"],"apiGroups":["","example.com"],"apiVersions":["v1"],"resources":["configmaps","widgets"]}]}]}`)
	// The webhook's informer has the configuration once a create is
	// labelled.
	waitFor(t, func() bool {
		m := e.must(201, "POST", cmPath, map[string]any{"metadata": map[string]any{"generateName": "probe-"}})
		e.must(200, "DELETE", cmPath+"/"+path(m, "metadata", "name").(string), nil)
		return path(m, "metadata", "labels", "mutated") == "yes"
	})

	for _, c := range []struct{ coll, base, kind string }{
		{cmPath, "cm-", "built-in"},
		{"/apis/example.com/v1/namespaces/default/widgets", "w-", "custom"},
	} {
		taken := map[string]any{"metadata": map[string]any{"name": c.base + "taken"}}
		if c.kind == "custom" {
			taken = widget(c.base+"taken", "v1")
		}
		e.must(201, "POST", c.coll, taken)
		mu.Lock()
		next[c.base] = []string{"taken", "taken"}
		mu.Unlock()
		before := h.count(c.base)
		obj := map[string]any{"metadata": map[string]any{"generateName": c.base}}
		if c.kind == "custom" {
			obj = widget("", "v1")
			obj["metadata"] = map[string]any{"generateName": c.base}
		}
		m := e.must(201, "POST", c.coll, obj)
		if path(m, "metadata", "name") != c.base+"free" || path(m, "metadata", "labels", "mutated") != "yes" {
			t.Fatalf("%s: created %v", c.kind, m["metadata"])
		}
		if n := h.count(c.base) - before; n != 1 {
			t.Fatalf("%s: the webhook was called %d times for one create drawing three names, want 1", c.kind, n)
		}
	}

	// A name the webhook gave is not generated: its conflict is not
	// tried again, as kube's store decides after admission.
	e.must(201, "POST", cmPath, map[string]any{"metadata": map[string]any{"name": "named-by-hook"}})
	before := h.count("named-")
	r := e.do("POST", cmPath, map[string]any{"metadata": map[string]any{"generateName": "named-"}})
	if r.code != 409 || h.count("named-")-before != 1 {
		t.Fatalf("a name the webhook gave that exists: %d after %d calls, want 409 after 1", r.code, h.count("named-")-before)
	}
}
