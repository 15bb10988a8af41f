package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// kubeEncoded is b, an object's JSON, as kube's typed encoder writes it:
// decoded into the Go type of apiVersion and kind and encoded again
// (without kind and apiVersion for a typed list's item).
func kubeEncoded(t *testing.T, apiVersion, kind string, b []byte, item bool) []byte {
	t.Helper()
	obj, err := legacyscheme.Scheme.New(schema.FromAPIVersionAndKind(apiVersion, kind))
	if err != nil {
		t.Fatalf("%s %s: %v", apiVersion, kind, err)
	}
	if err := json.Unmarshal(b, obj); err != nil {
		t.Fatalf("%s: %v: %s", kind, err, b)
	}
	if item {
		reflect.ValueOf(obj).Elem().FieldByName("TypeMeta").SetZero()
	}
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBuiltinObjectsInKubeOrder: a built-in object is stored, and so
// answered, read, listed and watched, in kube's typed order: kind,
// apiVersion, metadata with ObjectMeta's fields in their Go order
// (resourceVersion after uid), then the type's own fields in theirs.
// An object an earlier serve stored in its order (apiVersion, kind,
// metadata's members by name) still reads, with resourceVersion among
// them by name, until it is written again.
func TestBuiltinObjectsInKubeOrder(t *testing.T) {
	e := newEnv(t)
	kinds := []struct {
		apiVersion, kind, collection, key, name, body, patch string
	}{
		{"v1", "ConfigMap", "/api/v1/namespaces/default/configmaps", "/registry/configmaps/default/cm", "cm",
			`{"metadata":{"name":"cm","labels":{"b":"1","a":"2"},"annotations":{"x":"y"},"finalizers":["example.com/f"]},"data":{"k":"v"},"binaryData":{"b":"AA=="},"immutable":false,"kind":"ConfigMap","apiVersion":"v1"}`,
			`{"metadata":{"labels":{"c":"3"}}}`},
		{"v1", "Pod", "/api/v1/namespaces/default/pods", "/registry/pods/default/pod", "pod",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod","generateName":"p-"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
			`{"metadata":{"annotations":{"a":"b"}}}`},
		{"apps/v1", "Deployment", "/apis/apps/v1/namespaces/default/deployments", "/registry/deployments/default/dep", "dep",
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"dep"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
			`{"spec":{"replicas":2}}`},
		{"v1", "Namespace", "/api/v1/namespaces", "/registry/namespaces/ns-order", "ns-order",
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns-order","labels":{"z":"1"}}}`,
			`{"metadata":{"annotations":{"a":"b"}}}`},
		{"v1", "Secret", "/api/v1/namespaces/default/secrets", "/registry/secrets/default/s", "s",
			`{"apiVersion":"v1","kind":"Secret","type":"Opaque","metadata":{"name":"s"},"data":{"k":"dg=="}}`,
			`{"metadata":{"labels":{"l":"v"}}}`},
	}
	rvRE := regexp.MustCompile(`"resourceVersion":"[0-9]+",?`)
	for _, k := range kinds {
		same := func(what string, b []byte, item bool) {
			t.Helper()
			b = bytes.TrimSpace(b)
			if want := kubeEncoded(t, k.apiVersion, k.kind, b, item); !bytes.Equal(b, want) {
				t.Errorf("%s %s not in kube's order:\n got:  %s\n want: %s", k.kind, what, b, want)
			}
		}
		created := e.do("POST", k.collection, k.body)
		if created.code != 201 {
			t.Fatalf("create %s: %d %s", k.kind, created.code, created.body)
		}
		same("create", created.body, false)
		rv := path(created.json(t), "metadata", "resourceVersion").(string)
		got := e.do("GET", k.collection+"/"+k.name, nil)
		same("get", got.body, false)
		same("update", e.do("PUT", k.collection+"/"+k.name, string(got.body)).body, false)
		same("merge patch", e.do("PATCH", k.collection+"/"+k.name, k.patch, "Content-Type", "application/merge-patch+json").body, false)
		got = e.do("GET", k.collection+"/"+k.name, nil)
		same("get after patch", got.body, false)
		// The stored value is the answer without its resourceVersion.
		kv, err := e.etcd.Client.Get(t.Context(), k.key)
		if err != nil || len(kv.Kvs) != 1 {
			t.Fatalf("%s in etcd: %v %v", k.key, kv, err)
		}
		if want := rvRE.ReplaceAll(bytes.TrimSpace(got.body), nil); !bytes.Equal(kv.Kvs[0].Value, want) {
			t.Errorf("%s stored:\n got:  %s\n want: %s", k.kind, kv.Kvs[0].Value, want)
		}
		list := e.do("GET", k.collection+"?fieldSelector=metadata.name%3D"+k.name, nil)
		var l struct{ Items []json.RawMessage }
		if err := json.Unmarshal(list.body, &l); err != nil || len(l.Items) != 1 {
			t.Fatalf("list %s: %s", k.kind, list.body)
		}
		same("list item", l.Items[0], true)
		watch := e.do("GET", k.collection+"?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3D"+k.name+"&resourceVersion="+rv, nil)
		n := 0
		for line := range bytes.Lines(watch.body) {
			var ev struct{ Object json.RawMessage }
			if err := json.Unmarshal(line, &ev); err != nil {
				t.Fatalf("watch %s: %s", k.kind, watch.body)
			}
			same("watch event", ev.Object, false)
			n++
		}
		if n == 0 {
			t.Errorf("watch %s: %d events: %s", k.kind, n, watch.body)
		}
	}

	// A ConfigMap as an earlier serve stored it.
	old := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"creationTimestamp":"2026-01-02T03:04:05Z","labels":{"a":"b"},"name":"old","namespace":"default","uid":"6a1c2f4e-0000-4000-8000-000000000001"},"data":{"k":"v"}}`
	if _, err := e.etcd.Client.Put(t.Context(), "/registry/configmaps/default/old", old); err != nil {
		t.Fatal(err)
	}
	got := e.do("GET", "/api/v1/namespaces/default/configmaps/old", nil)
	rv := path(got.json(t), "metadata", "resourceVersion").(string)
	if want := strings.Replace(old, `"namespace":"default",`, `"namespace":"default","resourceVersion":"`+rv+`",`, 1); strings.TrimSpace(string(got.body)) != want {
		t.Errorf("old order read:\n got:  %s\n want: %s", got.body, want)
	}
	patched := e.do("PATCH", "/api/v1/namespaces/default/configmaps/old", `{"data":{"k":"w"}}`, "Content-Type", "application/merge-patch+json")
	if patched.code != 200 {
		t.Fatalf("patch old: %d %s", patched.code, patched.body)
	}
	if want := kubeEncoded(t, "v1", "ConfigMap", bytes.TrimSpace(patched.body), false); !bytes.Equal(bytes.TrimSpace(patched.body), want) {
		t.Errorf("old order written again:\n got:  %s\n want: %s", patched.body, want)
	}
}

// TestKubeOrderOfKinds: the order kubeOrder finds for a kind is its Go
// type's, kind and apiVersion first; a kind no scheme knows (a custom
// resource) has none.
func TestKubeOrderOfKinds(t *testing.T) {
	for _, c := range []struct {
		apiVersion, kind string
		want             []string
	}{
		{"v1", "ConfigMap", []string{"kind", "apiVersion", "metadata", "immutable", "data", "binaryData"}},
		{"apps/v1", "Deployment", []string{"kind", "apiVersion", "metadata", "spec", "status"}},
		{"rbac.authorization.k8s.io/v1", "ClusterRole", []string{"kind", "apiVersion", "metadata", "rules", "aggregationRule"}},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", []string{"kind", "apiVersion", "metadata", "spec", "status"}},
		{"apiregistration.k8s.io/v1", "APIService", []string{"kind", "apiVersion", "metadata", "spec", "status"}},
		{"example.com/v1", "Widget", nil},
		{"v1", "NoSuchKind", nil},
		{"", "ConfigMap", nil},
	} {
		o := kubeOrder(c.apiVersion, c.kind)
		var got []string
		if o != nil {
			got = o.top
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s: %q, want %q", c.apiVersion, c.kind, got, c.want)
		}
	}
	want := []string{"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
		"deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers", "managedFields"}
	if !reflect.DeepEqual(metaOrder, want) {
		t.Errorf("ObjectMeta: %q, want %q", metaOrder, want)
	}
}
