package client

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// recorder is an API server that records every request and answers each
// with answer (a 200 echo of the body as JSON when answer is nil).
type recorder struct {
	answer func(w http.ResponseWriter, r *http.Request, body []byte)

	mu   sync.Mutex // guards reqs
	reqs []recorded
}

// recorded is one request as the server saw it.
type recorded struct {
	method, path, rawQuery string
	contentType, accept    string
	body                   string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, recorded{method: r.Method, path: r.URL.EscapedPath(), rawQuery: r.URL.RawQuery,
		contentType: r.Header.Get("Content-Type"), accept: r.Header.Get("Accept"), body: string(body)})
	rec.mu.Unlock()
	if rec.answer != nil {
		rec.answer(w, r, body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if len(body) == 0 || body[0] != '{' {
		body = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}`)
	}
	_, _ = w.Write(body)
}

// take returns the requests recorded since the last take.
func (rec *recorder) take() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.reqs
	rec.reqs = nil
	return out
}

// one returns the only request recorded since the last take.
func (rec *recorder) one(t *testing.T) recorded {
	t.Helper()
	got := rec.take()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1: %+v", len(got), got)
	}
	return got[0]
}

func startRecorder(t *testing.T, answer func(http.ResponseWriter, *http.Request, []byte)) (*recorder, *Client) {
	t.Helper()
	rec := &recorder{answer: answer}
	return rec, newTestClient(t, startTLS(t, rec), nil)
}

// TestWriteOptionsOnTheWire: each WriteOption is the query parameter kube
// reads, on every write, and nothing else of the request changes.
func TestWriteOptionsOnTheWire(t *testing.T) {
	rec, c := startRecorder(t, nil)
	ctx := ctxT(t)
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	cm := newConfigMap("", "a", nil)
	cmJSON, _ := json.Marshal(cm)
	const applyYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"
	for _, tc := range []struct {
		name string
		call func() error
		want recorded
	}{
		{"create without options", func() error { _, err := cms.Create(ctx, cm); return err },
			recorded{method: "POST", path: "/api/v1/namespaces/ns/configmaps", contentType: "application/json", body: string(cmJSON)}},
		{"create with every option", func() error {
			_, err := cms.Create(ctx, cm, DryRunAll, FieldOwner("alice"), FieldValidation("Strict"))
			return err
		}, recorded{method: "POST", path: "/api/v1/namespaces/ns/configmaps", rawQuery: "dryRun=All&fieldManager=alice&fieldValidation=Strict",
			contentType: "application/json", body: string(cmJSON)}},
		{"the last owner wins", func() error { _, err := cms.Update(ctx, cm, FieldOwner("alice"), FieldOwner("b&b")); return err },
			recorded{method: "PUT", path: "/api/v1/namespaces/ns/configmaps/a", rawQuery: "fieldManager=b%26b", contentType: "application/json", body: string(cmJSON)}},
		{"merge patch dry run", func() error {
			_, err := cms.Patch(ctx, "a", MergePatch, []byte(`{"data":{"k":"x"}}`), DryRunAll, FieldValidation("Warn"))
			return err
		}, recorded{method: "PATCH", path: "/api/v1/namespaces/ns/configmaps/a", rawQuery: "dryRun=All&fieldValidation=Warn",
			contentType: string(MergePatch), body: `{"data":{"k":"x"}}`}},
		{"apply forced", func() error {
			_, err := cms.Apply(ctx, "a", []byte(applyYAML), FieldOwner("ctl"), ForceOwnership)
			return err
		},
			recorded{method: "PATCH", path: "/api/v1/namespaces/ns/configmaps/a", rawQuery: "fieldManager=ctl&force=true",
				contentType: "application/apply-patch+yaml", body: applyYAML}},
		{"apply as a patch type", func() error {
			_, err := cms.Patch(ctx, "a", ApplyPatch, []byte(applyYAML), ForceOwnership, FieldOwner("ctl"))
			return err
		}, recorded{method: "PATCH", path: "/api/v1/namespaces/ns/configmaps/a", rawQuery: "fieldManager=ctl&force=true",
			contentType: "application/apply-patch+yaml", body: applyYAML}},
		{"apply without an owner is the server's to refuse", func() error { _, err := cms.Apply(ctx, "a", []byte(applyYAML)); return err },
			recorded{method: "PATCH", path: "/api/v1/namespaces/ns/configmaps/a", contentType: "application/apply-patch+yaml", body: applyYAML}},
		{"nil options are skipped", func() error { _, err := cms.Update(ctx, cm, nil, DryRunAll); return err },
			recorded{method: "PUT", path: "/api/v1/namespaces/ns/configmaps/a", rawQuery: "dryRun=All", contentType: "application/json", body: string(cmJSON)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err != nil {
				t.Fatal(err)
			}
			got := rec.one(t)
			got.accept = ""
			if got != tc.want {
				t.Fatalf("request\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestForceOnlyOnApply: ForceOwnership on a create, an update or a patch
// that is not an apply is refused unsent, as kube refuses it (422) on a
// patch and ignores it on the others.
func TestForceOnlyOnApply(t *testing.T) {
	rec, c := startRecorder(t, nil)
	ctx := ctxT(t)
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	cm := newConfigMap("", "a", nil)
	for name, call := range map[string]func() error{
		"create": func() error { _, err := cms.Create(ctx, cm, FieldOwner("a"), ForceOwnership); return err },
		"update": func() error { _, err := cms.Update(ctx, cm, ForceOwnership); return err },
		"merge":  func() error { _, err := cms.Patch(ctx, "a", MergePatch, []byte(`{}`), ForceOwnership); return err },
		"json":   func() error { _, err := cms.Patch(ctx, "a", JSONPatch, []byte(`[]`), ForceOwnership); return err },
		"smp": func() error {
			_, err := cms.Patch(ctx, "a", StrategicMergePatch, []byte(`{}`), ForceOwnership)
			return err
		},
	} {
		if err := call(); !errors.Is(err, ErrRequest) {
			t.Errorf("%s with ForceOwnership: %v, want ErrRequest", name, err)
		}
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("sent %+v", got)
	}
}

// TestGetAtResourceVersion: ResourceVersion is the GET's resourceVersion.
func TestGetAtResourceVersion(t *testing.T) {
	rec, c := startRecorder(t, nil)
	ctx := ctxT(t)
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	for _, tc := range []struct {
		opts []GetOption
		want string
	}{
		{nil, ""},
		{[]GetOption{ResourceVersion("0")}, "resourceVersion=0"},
		{[]GetOption{ResourceVersion("0"), ResourceVersion("42")}, "resourceVersion=42"},
		{[]GetOption{ResourceVersion("")}, ""},
	} {
		if _, err := cms.Get(ctx, "a", tc.opts...); err != nil {
			t.Fatal(err)
		}
		got := rec.one(t)
		if got.method != "GET" || got.path != "/api/v1/namespaces/ns/configmaps/a" || got.rawQuery != tc.want || got.body != "" {
			t.Fatalf("Get %v: %+v, want query %q", tc.opts, got, tc.want)
		}
	}
}

// TestDeleteCollectionOptions: the delete options are the body, the list
// options the query.
func TestDeleteCollectionOptions(t *testing.T) {
	rec, c := startRecorder(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}`)
	})
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	grace, bg := int64(5), "Background"
	err := cms.DeleteCollection(ctxT(t), wire.DeleteOptions{DryRun: []string{"All"}, GracePeriodSeconds: &grace, PropagationPolicy: &bg},
		wire.ListOptions{LabelSelector: "app=x", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	got := rec.one(t)
	const body = `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":5,"propagationPolicy":"Background","dryRun":["All"]}`
	if got.method != "DELETE" || got.path != "/api/v1/namespaces/ns/configmaps" || got.rawQuery != "labelSelector=app%3Dx" ||
		got.contentType != "application/json" || got.body != body {
		t.Fatalf("request %+v\nwant body %s", got, body)
	}
}

// TestSubresourceAddressing: a subresource's object calls address
// .../{name}/{subresource}; its Create posts to the object the body
// names; it has no collection.
func TestSubresourceAddressing(t *testing.T) {
	rec, c := startRecorder(t, nil)
	ctx := ctxT(t)
	base := NewResource[*object.Unstructured](c, pods).Namespace("ns")
	status := base.Subresource("status")
	p := newConfigMap("", "p", nil)
	for _, tc := range []struct {
		name         string
		call         func() error
		method, path string
	}{
		{"get", func() error { _, err := status.Get(ctx, "p"); return err }, "GET", "/api/v1/namespaces/ns/pods/p/status"},
		{"update", func() error { _, err := status.Update(ctx, p); return err }, "PUT", "/api/v1/namespaces/ns/pods/p/status"},
		{"patch", func() error { _, err := status.Patch(ctx, "p", MergePatch, []byte(`{}`)); return err }, "PATCH", "/api/v1/namespaces/ns/pods/p/status"},
		{"apply", func() error { _, err := status.Apply(ctx, "p", []byte(`{}`), FieldOwner("x")); return err }, "PATCH", "/api/v1/namespaces/ns/pods/p/status"},
		{"create", func() error { _, err := base.Subresource("eviction").Create(ctx, p); return err }, "POST", "/api/v1/namespaces/ns/pods/p/eviction"},
		{"create in the object's namespace", func() error {
			_, err := NewResource[*object.Unstructured](c, pods).Subresource("binding").Create(ctx, newConfigMap("other", "p", nil))
			return err
		}, "POST", "/api/v1/namespaces/other/pods/p/binding"},
		{"the parent is unchanged", func() error { _, err := base.Get(ctx, "p"); return err }, "GET", "/api/v1/namespaces/ns/pods/p"},
		{"namespace of a subresource", func() error { _, err := status.Namespace("n2").Get(ctx, "p"); return err }, "GET", "/api/v1/namespaces/n2/pods/p/status"},
	} {
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := rec.one(t); got.method != tc.method || got.path != tc.path {
			t.Fatalf("%s: %s %s, want %s %s", tc.name, got.method, got.path, tc.method, tc.path)
		}
	}

	refused := map[string]func() error{
		"list":     func() error { _, err := status.List(ctx, wire.ListOptions{}); return err },
		"list all": func() error { _, err := status.ListAll(ctx, wire.ListOptions{}); return err },
		"list each": func() error {
			_, err := status.ListEach(ctx, wire.ListOptions{}, func(u) error { return nil }, nil)
			return err
		},
		"list chunks": func() error {
			_, err := status.ListChunks(ctx, wire.ListOptions{}, 0, func([]u) error { return nil })
			return err
		},
		"watch":             func() error { _, err := status.Watch(ctx, wire.ListOptions{}); return err },
		"delete":            func() error { _, err := status.Delete(ctx, "p", wire.DeleteOptions{}); return err },
		"delete collection": func() error { return status.DeleteCollection(ctx, wire.DeleteOptions{}, wire.ListOptions{}) },
		"create unnamed": func() error {
			_, err := base.Subresource("eviction").Create(ctx, newConfigMap("", "", nil))
			return err
		},
		"nested":            func() error { _, err := status.Subresource("scale").Get(ctx, "p"); return err },
		"empty subresource": func() error { _, err := base.Subresource("").Get(ctx, "p"); return err },
		"subresource ..":    func() error { _, err := base.Subresource("..").Get(ctx, "p"); return err },
	}
	for _, name := range []string{"", ".", "..", "p/status", "p%2Fstatus", "a/"} {
		refused["get "+name] = func() error { _, err := base.Get(ctx, name); return err }
		refused["patch "+name] = func() error { _, err := base.Patch(ctx, name, MergePatch, []byte(`{}`)); return err }
		refused["apply "+name] = func() error { _, err := base.Apply(ctx, name, []byte(`{}`), FieldOwner("x")); return err }
		refused["update "+name] = func() error { _, err := base.Update(ctx, newConfigMap("", name, nil)); return err }
		refused["delete "+name] = func() error { _, err := base.Delete(ctx, name, wire.DeleteOptions{}); return err }
		refused["status get "+name] = func() error { _, err := status.Get(ctx, name); return err }
	}
	for _, ns := range []string{"a/b", "..", "%"} {
		refused["namespace "+ns] = func() error { _, err := base.Namespace(ns).Get(ctx, "p"); return err }
		refused["list namespace "+ns] = func() error { _, err := base.Namespace(ns).List(ctx, wire.ListOptions{}); return err }
		refused["create in namespace "+ns] = func() error { _, err := base.Namespace(ns).Create(ctx, p); return err }
	}
	for name, call := range refused {
		if err := call(); !errors.Is(err, ErrRequest) {
			t.Errorf("%s: %v, want ErrRequest", name, err)
		}
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("sent %+v", got)
	}
}

// u is the tests' Unstructured.
type u = *object.Unstructured

// TestSubresourceStatusAnswer: pods/eviction and pods/binding answer a
// Status, not an object; Create returns the zero T and no error, in JSON
// as in protobuf.
func TestSubresourceStatusAnswer(t *testing.T) {
	const success = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}`
	for _, proto := range []bool{false, true} {
		_, c := startRecorder(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			if proto {
				w.Header().Set("Content-Type", wire.ContentTypeProtobuf)
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write(wire.AppendEnvelope(nil, wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, appendStr(nil, 2, "Success")))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, success)
		})
		ev := NewResource[*testPod](c, pods).Namespace("ns").Subresource("eviction")
		got, err := ev.Create(ctxT(t), &testPod{ObjectMeta: ObjectMeta{Name: "p"}})
		if err != nil || got != nil {
			t.Fatalf("protobuf %v: %+v, %v; want the zero T", proto, got, err)
		}
	}
}

// TestSubresourceProtobufKind: a subresource's kind is not the resource's
// (deployments/scale is autoscaling/v1 Scale): its writes stay JSON until
// the server has answered it in protobuf, and then carry the kind of the
// server's answer; the parent's negotiation is its own.
func TestSubresourceProtobufKind(t *testing.T) {
	scaleTM := wire.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"}
	rec, c := startRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", wire.ContentTypeProtobuf)
		p := &testPod{ObjectMeta: ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "7"}}
		tm := scaleTM
		if !strings.HasSuffix(r.URL.Path, "/scale") {
			tm = wire.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
		}
		_, _ = w.Write(protoEnvelope(tm, p))
	})
	ctx := ctxT(t)
	deps := NewResource[*testPod](c, GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("ns")
	if _, err := deps.Get(ctx, "web"); err != nil { // the parent now writes protobuf
		t.Fatal(err)
	}
	rec.take()
	scale := deps.Subresource("scale")
	obj := &testPod{ObjectMeta: ObjectMeta{Name: "web"}}
	if _, err := scale.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if got := rec.one(t); got.contentType != "application/json" || got.accept != acceptProtobuf {
		t.Fatalf("first scale update: Content-Type %q, Accept %q; want JSON, asking for protobuf", got.contentType, got.accept)
	}
	got, err := scale.Get(ctx, "web")
	if err != nil || got.Kind != "Scale" || got.APIVersion != "autoscaling/v1" {
		t.Fatalf("get scale: %+v, %v", got, err)
	}
	rec.take()
	if _, err := scale.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	sent := rec.one(t)
	e, err := wire.DecodeEnvelope([]byte(sent.body))
	if sent.contentType != wire.ContentTypeProtobuf || err != nil || e.TypeMeta != scaleTM {
		t.Fatalf("scale update: Content-Type %q, envelope %+v (%v); want protobuf of %+v", sent.contentType, e.TypeMeta, err, scaleTM)
	}
	// The parent's writes keep the parent's kind.
	if _, err := deps.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	sent = rec.one(t)
	if e, err := wire.DecodeEnvelope([]byte(sent.body)); err != nil || e.TypeMeta != (wire.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}) {
		t.Fatalf("deployment update: envelope %+v (%v)", e.TypeMeta, err)
	}
	// An apply is YAML/JSON whatever the resource speaks.
	if _, err := scale.Apply(ctx, "web", []byte("spec:\n  replicas: 2\n"), FieldOwner("x")); err != nil {
		t.Fatal(err)
	}
	if sent := rec.one(t); sent.contentType != string(ApplyPatch) || sent.accept != acceptProtobuf || sent.body != "spec:\n  replicas: 2\n" {
		t.Fatalf("apply: %+v", sent)
	}
}
