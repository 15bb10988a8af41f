package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// TestKubeTypedWritesSameAsOurs sends the same writes of built-in kinds to
// kube-apiserver and to listwatch and compares the answers: a refusal's
// code, reason, message and causes; an admitted object's fields that the
// kind's strategy, defaults and conversion decide.
func TestKubeTypedWritesSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	kc := kubeClient(t, ks.AdminConfig())
	ns := kubeNamespace(t, kc)
	oc := ourClient(t, startServer(t, ""))
	ctx := t.Context()
	gvr := func(res string) client.GroupVersionResource {
		return client.GroupVersionResource{Version: "v1", Resource: res}
	}
	if _, err := client.NewResource[*object.Unstructured](oc, gvr("namespaces")).Create(ctx, obj(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns))); err != nil {
		t.Fatal(err)
	}
	type write func(c *client.Client) (*object.Unstructured, error)
	create := func(res, body string) write {
		return func(c *client.Client) (*object.Unstructured, error) {
			return client.NewResource[*object.Unstructured](c, gvr(res)).Namespace(ns).Create(ctx, obj(t, body))
		}
	}
	patch := func(res, name, p string) write {
		return func(c *client.Client) (*object.Unstructured, error) {
			return client.NewResource[*object.Unstructured](c, gvr(res)).Namespace(ns).Patch(ctx, name, client.MergePatch, []byte(p))
		}
	}
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"containers":[{"name":"c","image":"busybox","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"100m","memory":"64Mi"}}}]},"status":{"phase":"Running","podIP":"10.0.0.9"}}`
	for _, tc := range []struct {
		name   string
		w      write
		fields [][]string // compared when admitted
	}{
		{name: "bool in ConfigMap data", w: create("configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"enabled":true}}`)},
		{name: "bad ConfigMap key", w: create("configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"k"},"data":{"a b":"1"}}`)},
		{name: "pod without containers", w: create("pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"empty"},"spec":{}}`)},
		{name: "pod defaults and status", w: create("pods", fmt.Sprintf(pod, "p")), fields: [][]string{
			{"metadata", "generation"}, {"spec", "containers"}, {"spec", "restartPolicy"}, {"spec", "dnsPolicy"},
			{"spec", "schedulerName"}, {"spec", "terminationGracePeriodSeconds"}, {"spec", "securityContext"},
			{"status", "phase"}, {"status", "podIP"}, {"status", "qosClass"},
		}},
		{name: "pod spec change", w: patch("pods", "p", `{"spec":{"restartPolicy":"Never"}}`)},
		{name: "pod deadline bumps generation", w: patch("pods", "p", `{"spec":{"activeDeadlineSeconds":60},"status":{"phase":"Failed"}}`),
			fields: [][]string{{"metadata", "generation"}, {"spec", "activeDeadlineSeconds"}, {"status", "phase"}}},
		{name: "immutable ConfigMap", w: create("configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"immutable":true,"data":{"a":"1"}}`),
			fields: [][]string{{"immutable"}, {"data"}, {"metadata", "generation"}}},
		{name: "immutable ConfigMap change", w: patch("configmaps", "frozen", `{"data":{"a":"2"},"immutable":false}`)},
		{name: "Secret stringData", w: create("secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"type":"example.com/a","stringData":{"user":"admin"}}`),
			fields: [][]string{{"type"}, {"data"}, {"stringData"}}},
		{name: "Secret type change", w: patch("secrets", "s", `{"type":"example.com/b"}`)},
		{name: "TLS Secret without keys", w: create("secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tls"},"type":"kubernetes.io/tls"}`)},
		{name: "service defaults and status", w: create("services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}],"selector":{"a":"b"}},"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}}`),
			fields: [][]string{{"spec", "ports"}, {"spec", "type"}, {"spec", "sessionAffinity"}, {"spec", "internalTrafficPolicy"}, {"status"}}},
		{name: "service without ports", w: create("services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"noports"},"spec":{}}`)},
		{name: "service account", w: create("serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa"}}`),
			fields: [][]string{{"metadata", "generation"}, {"secrets"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, kerr := tc.w(kc)
			got, oerr := tc.w(oc)
			if (kerr == nil) != (oerr == nil) {
				t.Fatalf("kube: %v; ours: %v", kerr, oerr)
			}
			if kerr != nil {
				ks, os := statusOf(t, kerr), statusOf(t, oerr)
				if ks.Details != nil {
					ks.Details.UID = ""
				}
				if !reflect.DeepEqual(ks, os) {
					t.Fatalf("status differs:\nkube: %s\nours: %s", jsonOf(ks), jsonOf(os))
				}
				return
			}
			for _, f := range tc.fields {
				kv, _ := want.Nested(f...)
				ov, _ := got.Nested(f...)
				if !reflect.DeepEqual(kv, ov) {
					t.Errorf("%v: kube %s, ours %s", f, jsonOf(kv), jsonOf(ov))
				}
			}
		})
	}
}

func obj(t *testing.T, s string) *object.Unstructured {
	t.Helper()
	u := &object.Unstructured{}
	if err := json.Unmarshal([]byte(s), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func statusOf(t *testing.T, err error) *wire.Status {
	t.Helper()
	var st *wire.Status
	if !errors.As(err, &st) {
		t.Fatalf("%v (%T) carries no Status", err, err)
	}
	c := *st
	return &c
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
