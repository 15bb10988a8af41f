package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
)

// TestKubeOpenAPIExplainSameAsOurs: kubectl explain prints the same for
// built-in kinds against a real kube-apiserver and against serve, from
// /openapi/v3 and from /openapi/v2.
func TestKubeOpenAPIExplainSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	s := startServer(t, "")
	bin := kubectlPath(t)
	for _, format := range []string{"plaintext", "plaintext-openapiv2"} {
		kubeHome, ourHome := t.TempDir(), t.TempDir()
		for _, what := range []string{
			"pods", "pods.spec.containers", "pods.spec.containers.resources", "services.spec",
			"deployments.spec.strategy", "configmaps", "namespaces.status", "leases.spec",
			"customresourcedefinitions.spec.versions.schema", "roles.rules", "cronjobs.spec",
		} {
			want, err := runKubectl(t, bin, ks.KubeconfigPath, kubeHome, "", "explain", what, "--output", format)
			if err != nil {
				t.Fatalf("kube-apiserver: explain %s: %v\n%s", what, err, want)
			}
			got, err := runKubectl(t, bin, s.KubeconfigPath(), ourHome, "", "explain", what, "--output", format)
			if err != nil {
				t.Fatalf("serve: explain %s: %v\n%s", what, err, got)
			}
			if got != want {
				t.Errorf("%s explain %s differs:\n--- kube-apiserver\n%s\n--- serve\n%s", format, what, want, got)
			}
		}
	}
}

// TestKubeOpenAPIDocumentsSameAsOurs: the OpenAPI v3 path items and
// schemas of the resources serve has are kube-apiserver's.
func TestKubeOpenAPIDocumentsSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	s := startServer(t, "")
	ourCfg, err := client.LoadKubeconfig(s.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	kube, ours := kubeClient(t, ks.AdminConfig()), kubeClient(t, ourCfg)
	// An unknown group-version, and a path beyond one.
	for _, p := range []string{"/openapi/v3/apis/nope.example.com/v1", "/openapi/v3/api/v1/x", "/openapi/v2/x", "/openapi/v4"} {
		status := func(base string, ca []byte, token string) (int, string) {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(ca)
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodGet, base+p, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		wc, wb := status(ks.URL, ks.Creds.CAPEM, ks.Creds.AdminToken)
		gc, gb := status(s.URL(), s.Credentials().CAPEM, s.Credentials().AdminToken)
		if wc != gc || (wc != 404 && wb != gb) {
			t.Errorf("GET %s: kube-apiserver %d %.200q, serve %d %.200q", p, wc, wb, gc, gb)
		}
	}
	var ourIdx handler3.OpenAPIV3Discovery
	getJSON(t, ours, "/openapi/v3", &ourIdx)
	for gv, paths := range map[string][]string{
		"api/v1": {"/api/v1/namespaces/{namespace}/pods", "/api/v1/namespaces/{namespace}/pods/{name}", "/api/v1/namespaces/{namespace}/pods/{name}/status",
			"/api/v1/pods", "/api/v1/namespaces/{name}", "/api/v1/namespaces/{name}/finalize", "/api/v1/watch/namespaces/{namespace}/configmaps/{name}",
			"/api/v1/namespaces/{namespace}/replicationcontrollers/{name}/scale"},
		"apis/apps/v1":                 {"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "/apis/apps/v1/deployments"},
		"apis/apiextensions.k8s.io/v1": {"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}/status"},
		"apis/authorization.k8s.io/v1": {"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"},
		"apis/coordination.k8s.io/v1":  {"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"},
	} {
		if _, ok := ourIdx.Paths[gv]; !ok {
			t.Fatalf("serve's /openapi/v3 lacks %s", gv)
		}
		var want, got spec3.OpenAPI
		getJSON(t, kube, "/openapi/v3/"+gv, &want)
		getJSON(t, ours, "/openapi/v3/"+gv, &got)
		if w, g := want.Info, got.Info; w.Title != g.Title || w.Version != g.Version {
			t.Errorf("%s info: kube-apiserver %+v, serve %+v", gv, w.InfoProps, g.InfoProps)
		}
		if w, g := must(json.Marshal(want.Components.SecuritySchemes)), must(json.Marshal(got.Components.SecuritySchemes)); string(w) != string(g) {
			t.Errorf("%s security: kube-apiserver %s, serve %s", gv, w, g)
		}
		for _, p := range paths {
			w, _ := json.Marshal(want.Paths.Paths[p])
			g, _ := json.Marshal(got.Paths.Paths[p])
			if want.Paths.Paths[p] == nil || string(w) != string(g) {
				t.Errorf("%s %s:\nkube-apiserver %s\nserve          %s", gv, p, firstDiff(w, g), firstDiff(g, w))
			}
		}
		for name, ws := range want.Components.Schemas {
			gs, ok := got.Components.Schemas[name]
			if !ok {
				continue // a kind serve does not have
			}
			w, _ := json.Marshal(ws)
			g, _ := json.Marshal(gs)
			if string(w) != string(g) {
				t.Errorf("%s schema %s:\nkube-apiserver %s\nserve          %s", gv, name, firstDiff(w, g), firstDiff(g, w))
			}
		}
	}
}

// getJSON decodes the answer to GET path, which must be a 200.
func getJSON(t *testing.T, c *client.Client, path string, into any) {
	t.Helper()
	resp, err := c.Do(t.Context(), http.MethodGet, path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v %.200s", path, resp.StatusCode, err, b)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// kubeSubresourcePaths are the paths described by more than a resource's
// standard storage (kube's REST objects, server.openAPISubresources, or
// stand-ins of their own); kube-apiserver's documents must have them, so
// that the comparison covers them.
var kubeSubresourcePaths = []string{
	"/api/v1/namespaces/{namespace}/pods/{name}/exec",
	"/api/v1/namespaces/{namespace}/pods/{name}/attach",
	"/api/v1/namespaces/{namespace}/pods/{name}/portforward",
	"/api/v1/namespaces/{namespace}/pods/{name}/proxy",
	"/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}",
	"/api/v1/namespaces/{namespace}/pods/{name}/log",
	"/api/v1/namespaces/{namespace}/pods/{name}/binding",
	"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
	"/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers",
	"/api/v1/namespaces/{namespace}/pods/{name}/resize",
	"/api/v1/namespaces/{namespace}/services/{name}/proxy",
	"/api/v1/namespaces/{namespace}/services/{name}/proxy/{path}",
	"/api/v1/nodes/{name}/proxy",
	"/api/v1/nodes/{name}/proxy/{path}",
	"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
	"/api/v1/componentstatuses/{name}",
	"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval",
}

// kubeOnlyOpenAPIPath: kube-apiserver's /openapi/v2 also has the routes
// of its non-resource documents (discovery at /api/, /apis/ and
// /apis/<group>/, /version/, the service-account issuer's OIDC documents),
// which listwatch serves with handlers of its own that make no routes. A
// known difference.
func kubeOnlyOpenAPIPath(p string) bool {
	switch p {
	case "/api/", "/apis/", "/version/", "/.well-known/openid-configuration/", "/openid/v1/jwks/":
		return true
	}
	return strings.HasPrefix(p, "/apis/") && strings.HasSuffix(p, "/") && strings.Count(p, "/") == 3
}

// TestKubeOpenAPIPathsSameAsOurs: /openapi/v2, /openapi/v3/api/v1 and
// /openapi/v3/apis/certificates.k8s.io/v1 (CSR approval) have the paths
// kube-apiserver's have, each the same: operations, their IDs,
// parameters, produces and responses, connect subresources and pods/log
// included. Left out: kubeOnlyOpenAPIPath, and the paths of the CRDs
// other tests made on the shared kube-apiserver.
func TestKubeOpenAPIPathsSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	s := startServer(t, "")
	ourCfg, err := client.LoadKubeconfig(s.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	kube, ours := kubeClient(t, ks.AdminConfig()), kubeClient(t, ourCfg)
	var crds struct {
		Items []struct{ Spec struct{ Group string } }
	}
	getJSON(t, kube, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crds)
	crdGroups := map[string]bool{}
	for _, c := range crds.Items {
		crdGroups[c.Spec.Group] = true
	}
	crdPath := func(p string) bool {
		parts := strings.Split(p, "/")
		return len(parts) > 2 && parts[1] == "apis" && crdGroups[parts[2]]
	}
	// prefix: the paths a document has (a v3 one, its group-version's).
	for _, d := range []struct{ doc, prefix string }{
		{"/openapi/v2", "/"},
		{"/openapi/v3/api/v1", "/api/v1/"},
		{"/openapi/v3/apis/certificates.k8s.io/v1", "/apis/certificates.k8s.io/v1/"},
	} {
		var want, got struct {
			Paths map[string]any `json:"paths"`
		}
		getJSON(t, kube, d.doc, &want)
		getJSON(t, ours, d.doc, &got)
		for _, p := range kubeSubresourcePaths {
			if strings.HasPrefix(p, d.prefix) && want.Paths[p] == nil {
				t.Errorf("kube-apiserver's %s lacks %s", d.doc, p)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(want.Paths)) {
			g, ok := got.Paths[p]
			if !ok {
				if !kubeOnlyOpenAPIPath(p) && !crdPath(p) {
					t.Errorf("%s: serve lacks %s", d.doc, p)
				}
				continue
			}
			wb, gb := must(json.Marshal(want.Paths[p])), must(json.Marshal(g))
			if string(wb) != string(gb) {
				t.Errorf("%s %s:\nkube-apiserver %s\nserve          %s", d.doc, p, firstDiff(wb, gb), firstDiff(gb, wb))
			}
		}
		for _, p := range slices.Sorted(maps.Keys(got.Paths)) {
			if _, ok := want.Paths[p]; !ok {
				t.Errorf("%s: serve has %s, kube-apiserver does not", d.doc, p)
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// firstDiff is a around the first byte where a differs from b.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo, hi := max(0, i-150), min(len(a), i+250)
	return string(a[lo:hi])
}
