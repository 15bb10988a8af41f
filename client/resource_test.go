package client

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

var configMaps = GroupVersionResource{Version: "v1", Resource: "configmaps"}
var pods = GroupVersionResource{Version: "v1", Resource: "pods"}

func newConfigMap(ns, name string, labels map[string]string) *object.Unstructured {
	u := &object.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	u.SetName(name)
	if ns != "" {
		u.SetNamespace(ns)
	}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

func TestResourceVerbsUnstructured(t *testing.T) {
	api := newFakeAPI()
	srv := startTLS(t, api)
	c := newTestClient(t, srv, nil)
	ctx := ctxT(t)
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns1")

	created, err := cms.Create(ctx, newConfigMap("", "a", map[string]string{"app": "x"}))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if created.GetResourceVersion() == "" || created.GetNamespace() != "ns1" || created.GetName() != "a" {
		t.Fatalf("created = %v", created.Object)
	}
	if _, err := cms.Create(ctx, newConfigMap("", "a", nil)); !IsAlreadyExists(err) || IsConflict(err) {
		t.Fatalf("second Create: %v, want AlreadyExists", err)
	}

	got, err := cms.Get(ctx, "a")
	if err != nil || got.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if _, err := cms.Get(ctx, "missing"); !IsNotFound(err) {
		t.Fatalf("Get missing: %v, want NotFound", err)
	}
	if wire.CodeOf(func() error { _, err := cms.Get(ctx, "missing"); return err }()) != 404 {
		t.Fatal("NotFound code is not 404")
	}

	got.SetLabels(map[string]string{"app": "y"})
	updated, err := cms.Update(ctx, got)
	if err != nil || updated.GetLabels()["app"] != "y" || updated.GetResourceVersion() == got.GetResourceVersion() {
		t.Fatalf("Update = %v, %v", updated, err)
	}
	if _, err := cms.Update(ctx, got); !IsConflict(err) {
		t.Fatalf("stale Update: %v, want Conflict", err)
	}

	for _, tc := range []struct {
		pt    PatchType
		patch string
		want  string
	}{
		{MergePatch, `{"data":{"k":"merge"}}`, "merge"},
		{StrategicMergePatch, `{"data":{"k":"strategic"}}`, "strategic"},
		{JSONPatch, `[{"op":"replace","path":"/data/k","value":"json"}]`, "json"},
	} {
		p, err := cms.Patch(ctx, "a", tc.pt, []byte(tc.patch))
		if err != nil {
			t.Fatalf("Patch %s: %v", tc.pt, err)
		}
		if v, _ := p.Nested("data", "k"); v != tc.want {
			t.Fatalf("Patch %s: data.k = %v", tc.pt, v)
		}
	}
	last := api.seen()[len(api.seen())-1]
	if last.method != http.MethodPatch || last.header.Get("Content-Type") != string(JSONPatch) {
		t.Fatalf("last patch request: %s %s", last.method, last.header.Get("Content-Type"))
	}

	stale := "1"
	if _, err := cms.Delete(ctx, "a", wire.DeleteOptions{Preconditions: &wire.Preconditions{ResourceVersion: &stale}}); !IsConflict(err) {
		t.Fatalf("Delete with stale precondition: %v, want Conflict", err)
	}
	if res, err := cms.Delete(ctx, "a", wire.DeleteOptions{}); err != nil || !res.HasObject() || res.Object.GetName() != "a" {
		t.Fatalf("Delete: %+v, %v; want the deleted object back", res, err)
	}
	if _, err := cms.Delete(ctx, "a", wire.DeleteOptions{}); !IsNotFound(err) {
		t.Fatalf("second Delete: %v, want NotFound", err)
	}
	del := api.seen()[len(api.seen())-2]
	var opts wire.DeleteOptions
	if err := json.Unmarshal(del.body, &opts); err != nil || opts.Kind != "DeleteOptions" {
		t.Fatalf("delete body %s: %v", del.body, err)
	}

	for _, n := range []string{"b", "c", "d"} {
		app := "keep"
		if n != "d" {
			app = "drop"
		}
		if _, err := cms.Create(ctx, newConfigMap("", n, map[string]string{"app": app})); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.DeleteCollection(ctx, wire.DeleteOptions{}, wire.ListOptions{LabelSelector: "app=drop"}); err != nil {
		t.Fatalf("DeleteCollection: %v", err)
	}
	list, err := cms.List(ctx, wire.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "d" {
		t.Fatalf("List after DeleteCollection = %+v, %v", list, err)
	}
	dc := api.seen()[len(api.seen())-2]
	if dc.method != http.MethodDelete || dc.path != "/api/v1/namespaces/ns1/configmaps" || dc.query.Get("labelSelector") != "app=drop" {
		t.Fatalf("DeleteCollection request: %s %s %v", dc.method, dc.path, dc.query)
	}
}

func TestResourcePaths(t *testing.T) {
	api := newFakeAPI()
	srv := startTLS(t, api)
	c := newTestClient(t, srv, nil)
	ctx := ctxT(t)
	cms := NewResource[*object.Unstructured](c, configMaps)
	// All namespaces; Create takes the object's namespace.
	if _, err := cms.Create(ctx, newConfigMap("other", "x", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.List(ctx, wire.ListOptions{LabelSelector: "a=b", FieldSelector: "metadata.name=x", ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	seen := api.seen()
	if seen[0].path != "/api/v1/namespaces/other/configmaps" {
		t.Errorf("create path %s", seen[0].path)
	}
	if seen[1].path != "/api/v1/configmaps" || seen[1].query.Get("fieldSelector") != "metadata.name=x" ||
		seen[1].query.Get("resourceVersion") != "0" || seen[1].query.Has("watch") {
		t.Errorf("list request %s %v", seen[1].path, seen[1].query)
	}
	r := NewResource[*object.Unstructured](c, GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
	if got := r.Namespace("ns").path("ns", "d"); got != "/apis/apps/v1/namespaces/ns/deployments/d" {
		t.Errorf("group path %s", got)
	}
	if got := r.path("", ""); got != "/apis/apps/v1/deployments" {
		t.Errorf("cluster path %s", got)
	}
	if _, err := cms.Get(ctx, ""); err == nil {
		t.Error("Get with empty name succeeded")
	}
}

// A typed object (of k8s.io/api's shape) round-trips through the client.
func TestResourceTypedPod(t *testing.T) {
	api := newFakeAPI()
	srv := startTLS(t, api)
	c := newTestClient(t, srv, nil)
	ctx := ctxT(t)
	pc := NewResource[*testPod](c, pods).Namespace("default")
	pod := &testPod{
		TypeMeta:   wire.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec:       testPodSpec{Containers: []testContainer{{Name: "c", Image: "nginx"}}},
	}
	created, err := pc.Create(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if created.Namespace != "default" || created.ResourceVersion == "" || created.Spec.Containers[0].Image != "nginx" {
		t.Fatalf("created %+v", created)
	}
	list, err := pc.ListAll(ctx, wire.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Spec.Containers[0].Name != "c" {
		t.Fatalf("ListAll = %+v, %v", list, err)
	}
	patched, err := pc.Patch(ctx, "web", MergePatch, []byte(`{"metadata":{"labels":{"tier":"front"}}}`))
	if err != nil || patched.Labels["tier"] != "front" || patched.Labels["app"] != "web" {
		t.Fatalf("Patch = %+v, %v", patched, err)
	}
}

func TestStatusErrorMapping(t *testing.T) {
	cases := []struct {
		name  string
		code  int
		body  string
		check func(error) bool
		want  wire.StatusReason
	}{
		{"status body", 409, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists","code":409}`, IsAlreadyExists, wire.ReasonAlreadyExists},
		{"status without code", 410, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","message":"too old"}`, IsExpired, wire.ReasonExpired},
		{"gone expired", 410, `{"kind":"Status","apiVersion":"v1","reason":"Expired","code":410}`, IsGone, wire.ReasonExpired},
		{"plain text 404", 404, `404 page not found`, IsNotFound, wire.ReasonNotFound},
		{"empty 403", 403, ``, IsForbidden, wire.ReasonForbidden},
		{"html 401", 401, `<html>no</html>`, IsUnauthorized, wire.ReasonUnauthorized},
		{"422", 422, ``, IsInvalid, wire.ReasonInvalid},
		{"400", 400, `bad`, IsBadRequest, wire.ReasonBadRequest},
		{"429", 429, ``, IsTooManyRequests, wire.ReasonTooManyRequests},
		{"504", 504, ``, IsTimeout, wire.ReasonTimeout},
		{"conflict", 409, ``, IsConflict, wire.ReasonConflict},
		{"status no reason 404", 404, `{"kind":"Status","apiVersion":"v1","code":404}`, IsNotFound, wire.ReasonUnknown},
		{"gone", 410, `gone`, IsGone, wire.ReasonGone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.code)
				_, _ = w.Write([]byte(tc.body))
			}))
			c := newTestClient(t, srv, nil)
			_, err := c.Do(ctxT(t), http.MethodPost, "/api/v1/x", nil, []byte(`{}`))
			st, ok := statusOf(err)
			if !ok {
				t.Fatalf("error %T %v is not a *wire.Status", err, err)
			}
			if !tc.check(err) || st.Reason != tc.want || int(st.Code) != tc.code {
				t.Fatalf("status %+v: check false or reason/code wrong", st)
			}
			if tc.body != "" && !strings.HasPrefix(tc.body, "{") && st.Message != tc.body {
				t.Fatalf("message %q, want the body", st.Message)
			}
			// No other predicate claims an unrelated error.
			if tc.code != 409 && (IsConflict(err) || IsAlreadyExists(err)) {
				t.Fatal("conflict predicate matched")
			}
		})
	}
	if IsNotFound(nil) || IsGone(http.ErrHandlerTimeout) {
		t.Fatal("predicates matched a non-Status error")
	}
}

// TestRetryAfterHeaderWithStatusBody: a 429 whose Status body names no
// retry delay (kube's max-in-flight answer) still carries the header's.
func TestRetryAfterHeaderWithStatusBody(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int32
	}{
		{"status without details", `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`, 7},
		{"status with its own delay", `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":3}}`, 3},
		{"plain body", `too many requests, please try again later`, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(tc.body))
			}))
			// The 429s are retried (on a clock that does not wait) until
			// the retries run out.
			c := newTestClientClock(t, srv, newFakeClock(true), nil)
			_, err := c.Do(ctxT(t), http.MethodPost, "/api/v1/x", nil, []byte(`{}`))
			st, ok := statusOf(err)
			if !ok || !IsTooManyRequests(err) {
				t.Fatalf("error %T %v", err, err)
			}
			if st.Details == nil || st.Details.RetryAfterSeconds != tc.want {
				t.Fatalf("details %+v, want retryAfterSeconds %d", st.Details, tc.want)
			}
		})
	}
}
