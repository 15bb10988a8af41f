package apiserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
	"github.com/listwatch/listwatch/server/internal/pki"
)

// TestCRDSelectableFieldsAddedLater: a CRD that gains a selectable field
// after its watch cache has filled selects on it, from the cache as from
// storage. (The cache used to keep the field extractor it was made with,
// so the field selector matched nothing: 0 items with the cache, 1 with
// --disable-watch-cache.)
func TestCRDSelectableFieldsAddedLater(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noCache bool
	}{{"cache", false}, {"no cache", true}} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			srv := apiservertest.Start(t, "", func(o *apiserver.Options) {
				o.DisableWatchCache = tc.noCache
				o.Registerer = reg
			})
			c := newAdmin(t, srv)
			const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
			const widgets = "/apis/example.com/v1/namespaces/default/widgets"
			c.do(201, "POST", crds, gadgetCRD(false))
			c.do(201, "POST", widgets, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"color": "red"}})
			if !tc.noCache {
				// Fill the cache under the old definition.
				waitCached(t, c, reg, widgets)
			}

			crd := c.do(200, "GET", crds+"/widgets.example.com", nil)
			crd["spec"] = gadgetCRD(true)["spec"]
			c.do(200, "PUT", crds+"/widgets.example.com", crd)
			if !tc.noCache {
				waitCached(t, c, reg, widgets) // the new definition's cache
			}
			l := c.do(200, "GET", widgets+"?fieldSelector=spec.color%3Dred&resourceVersion=0", nil)
			if n := len(l["items"].([]any)); n != 1 {
				t.Fatalf("field selector on the added field: %d items, want 1", n)
			}
			l = c.do(200, "GET", widgets+"?fieldSelector=spec.color%3Dblue", nil)
			if n := len(l["items"].([]any)); n != 0 {
				t.Fatalf("field selector spec.color=blue: %d items, want 0", n)
			}
		})
	}
}

func gadgetCRD(selectable bool) map[string]any {
	v := map[string]any{
		"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			// kube refuses a selectable field the schema does not declare.
			"properties": map[string]any{"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				"properties": map[string]any{"color": map[string]any{"type": "string"}}}}}},
	}
	if selectable {
		v["selectableFields"] = []any{map[string]any{"jsonPath": ".spec.color"}}
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget"},
			"versions": []any{v},
		},
	}
}

// waitCached reads path until the widgets' watch cache holds one object,
// so that the next read is served from it.
func waitCached(t *testing.T, c *admin, reg *prometheus.Registry, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c.do(200, "GET", path+"?resourceVersion=0", nil) // starts the cache if needed
		if cachedObjects(t, reg, "example.com/widgets") == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the widgets' cache did not fill in 20s")
		}
		time.Sleep(20 * time.Millisecond) // polling a real condition, with a deadline
	}
}

func cachedObjects(t *testing.T, reg *prometheus.Registry, resource string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "watch_cache_objects" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource" && l.GetValue() == resource {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// admin is an HTTPS client of srv with the admin's certificate.
type admin struct {
	t    *testing.T
	url  string
	http *http.Client
}

func newAdmin(t *testing.T, srv *apiservertest.Server) *admin {
	tlsCfg, err := pki.ClientTLSConfig(srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &admin{t: t, url: srv.URL(), http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// do sends body (marshalled, if not nil) and checks the status code.
func (a *admin) do(code int, method, path string, body any) map[string]any {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code {
		a.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, code, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		a.t.Fatalf("%s %s: %v: %s", method, path, err, b)
	}
	return m
}
