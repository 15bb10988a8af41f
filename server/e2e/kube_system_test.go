package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKubeSystemObjectsSameAsOurs: the objects kube-apiserver keeps in
// kube-system itself (extension-apiserver-authentication, the legacy token
// tracking ConfigMap, its identity Lease: same name on the same host) are
// on serve too, with the same keys, labels and managers; the CRD list's
// Table has kube's columns; and a short watch that allows bookmarks gets
// one before it ends from both.
func TestKubeSystemObjectsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, _ := sideBySide(t)
	// shape is what must match: data keys, label and annotation keys,
	// the lease's duration, the managers.
	shape := func(c *rawClient, path string) string {
		t.Helper()
		var m map[string]any
		deadline := time.Now().Add(30 * time.Second)
		for {
			var code int
			// The loops start once the server is ready; a deadline on
			// the wait, not a synchronisation.
			if code, m = c.do("GET", path, "", ""); code == http.StatusOK || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		keys := func(v any) []string {
			mm, _ := v.(map[string]any)
			var out []string
			for k := range mm {
				out = append(out, k)
			}
			slices.Sort(out)
			return out
		}
		var managers []string
		md, _ := m["metadata"].(map[string]any)
		mf, _ := md["managedFields"].([]any)
		for _, f := range mf {
			f := f.(map[string]any)
			managers = append(managers, fmt.Sprint(f["manager"], "/", f["operation"]))
		}
		spec, _ := m["spec"].(map[string]any)
		return fmt.Sprintf("name=%v data=%v labels=%v annotations=%v duration=%v managers=%v",
			md["name"], keys(m["data"]), keys(md["labels"]), keys(md["annotations"]), spec["leaseDurationSeconds"], managers)
	}
	for _, path := range []string{
		"/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
		"/api/v1/namespaces/kube-system/configmaps/kube-apiserver-legacy-service-account-token-tracking",
	} {
		if k, o := shape(kube, path), shape(ours, path); k != o {
			t.Errorf("%s:\n kube:  %s\n serve: %s", path, k, o)
		}
	}
	identity := func(c *rawClient) string {
		_, m := c.do("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?labelSelector=apiserver.kubernetes.io%2Fidentity%3Dkube-apiserver", "", "")
		items, _ := m["items"].([]any)
		if len(items) != 1 {
			return fmt.Sprintf("%d identity leases", len(items))
		}
		name := jsonAt(items[0].(map[string]any), "metadata.name")
		return shape(c, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"+strings.Trim(name, `"`))
	}
	if k, o := identity(kube), identity(ours); k != o {
		t.Errorf("identity lease:\n kube:  %s\n serve: %s", k, o)
	}
	if k, o := kube.columns("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"), ours.columns("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"); k != o {
		t.Errorf("CRD Table columns:\n kube:  %s\n serve: %s", k, o)
	}
	// Both watches run side by side: 4 s each.
	bookmarks := make(chan string, 2)
	for _, c := range []*rawClient{kube, ours} {
		go func() {
			_, _, b := c.send("GET", "/api/v1/namespaces/kube-system/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=4", "", "", "")
			n := 0
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var ev struct{ Type string }
				if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "BOOKMARK" {
					n++
				}
			}
			bookmarks <- fmt.Sprintf("%s: %d", c.host, n)
		}()
	}
	for range 2 {
		if got := <-bookmarks; strings.HasSuffix(got, ": 0") {
			t.Errorf("no bookmark before a 4 s watch ended (%s)", got)
		}
	}
}

// TestKubeTerminatingNamespaceSameAsOurs: a create in a namespace being
// deleted (POST, dry run, from generateName, apply and PUT that create)
// is refused by kube's NamespaceLifecycle admission with a 403 whose
// details name the object as admission saw it (generateName, before a
// name is drawn) and carry the NamespaceTerminating cause client-go's
// apierrors.HasStatusCause looks for. serve answers alike.
func TestKubeTerminatingNamespaceSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	term := "term-" + ns
	for _, c := range []*rawClient{kube, ours} {
		if code, m := c.do("POST", "/api/v1/namespaces", jsonCT, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+term+`"}}`); code != http.StatusCreated {
			t.Fatalf("namespace: %d %v", code, m)
		}
		// Without a namespace controller the namespace stays
		// Terminating, on both servers.
		if code, m := c.do("DELETE", "/api/v1/namespaces/"+term, "", ""); code != http.StatusOK {
			t.Fatalf("delete namespace: %d %v", code, m)
		}
	}
	cms := "/api/v1/namespaces/" + term + "/configmaps"
	for _, r := range []struct{ method, path, ctype, body string }{
		{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n"}}`},
		{"POST", cms + "?dryRun=All", jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n"}}`},
		{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"g-"}}`},
		{"PATCH", cms + "/a?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`},
		{"PUT", cms + "/u", jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u"}}`},
		// NamespaceLifecycle runs before validation: a name the strategy
		// would refuse, or none at all, is still the namespace's 403.
		{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"UPPER"}}`},
		{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`},
		{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","labels":{"a b":"c"}}}`},
	} {
		k, o := kube.raw(r.method, r.path, r.ctype, r.body), ours.raw(r.method, r.path, r.ctype, r.body)
		kv := statusView(k) + fmt.Sprintf(" details=%v", k.m["details"])
		ov := statusView(o) + fmt.Sprintf(" details=%v", o.m["details"])
		if kv != ov {
			t.Errorf("%s %s %s:\n kube:  %s\n serve: %s", r.method, r.path, r.body, kv, ov)
		}
	}
}
