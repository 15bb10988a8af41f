package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// TestConnectDiscoveryMatchesKube: pods, services and nodes list their
// subresources exactly as kube-apiserver v1.37.2 does (kind, verbs,
// order), in aggregated discovery and in /api/v1.
func TestConnectDiscoveryMatchesKube(t *testing.T) {
	kube := loadKubeDiscovery(t)
	e := newEnv(t)
	core, _ := aggregatedList(t, e, "/api")
	for _, r := range core.Items[0].Versions[0].Resources {
		switch r.Resource {
		case "pods", "services", "nodes":
			if k := kube["/v1/"+r.Resource]; !reflect.DeepEqual(r.Subresources, k.Subresources) {
				t.Errorf("%s subresources:\n listwatch %+v\n kube      %+v", r.Resource, r.Subresources, k.Subresources)
			}
		}
	}
	legacy := e.must(200, "GET", "/api/v1", nil)
	names := map[string]bool{}
	for _, r := range legacy["resources"].([]any) {
		names[r.(map[string]any)["name"].(string)] = true
	}
	for _, n := range []string{"pods/log", "pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "services/proxy", "nodes/proxy"} {
		if !names[n] {
			t.Errorf("/api/v1 does not list %s", n)
		}
	}
}

func podJSON(name, node string, containers ...string) map[string]any {
	var cs []any
	for _, c := range containers {
		cs = append(cs, map[string]any{"name": c, "image": "busybox"})
	}
	spec := map[string]any{"containers": cs}
	if node != "" {
		spec["nodeName"] = node
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name}, "spec": spec}
}

func nodeJSON(name, address string, port int) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name},
		"status": map[string]any{
			"addresses":       []any{map[string]any{"type": "InternalIP", "address": address}},
			"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": port}},
		}}
}

// TestConnectErrorsAsKube: the answers kube-apiserver gives without a
// kubelet to reach (checked side by side in e2e TestKubePodSubresources).
func TestConnectErrorsAsKube(t *testing.T) {
	e := newEnv(t)
	pods := "/api/v1/namespaces/default/pods"
	e.must(201, "POST", pods, podJSON("unscheduled", "", "c"))
	e.must(201, "POST", pods, podJSON("two", "", "a", "b"))
	e.must(201, "POST", pods, podJSON("lost", "nowhere", "c"))

	// pods/log: a pod on no node has no log yet: 204, as kube's
	// LocationStreamer without a location.
	if r := e.do("GET", pods+"/unscheduled/log", nil); r.code != 204 || len(r.body) != 0 {
		t.Errorf("log of an unscheduled pod: %d %q", r.code, r.body)
	}
	e.expectStatus(400, "BadRequest", `container x is not valid for pod unscheduled`, "GET", pods+"/unscheduled/log?container=x", nil)
	e.expectStatus(400, "BadRequest", `a container name must be specified for pod two, choose one of: [a b]`, "GET", pods+"/two/log", nil)
	e.expectStatus(404, "NotFound", `pods "missing" not found`, "GET", pods+"/missing/log", nil)
	// kube's node getter names the request's resource.
	e.expectStatus(404, "NotFound", `pods "nowhere" not found`, "GET", pods+"/lost/log", nil)
	m := e.expectStatus(422, "Invalid", "", "GET", pods+"/unscheduled/log?tailLines=-1", nil)
	if !strings.Contains(m["message"].(string), "tailLines") {
		t.Errorf("tailLines=-1: %v", m)
	}
	e.expectStatus(400, "BadRequest", "", "GET", pods+"/unscheduled/log?tailLines=x", nil)
	e.expectStatus(405, "MethodNotAllowed", "", "POST", pods+"/unscheduled/log", "{}")
	e.expectStatus(404, "NotFound", "the server could not find the requested resource", "GET", pods+"/unscheduled/log/extra", nil)

	// exec, attach, portforward.
	for _, sub := range []string{"exec?command=ls", "attach?stdout=true", "portforward?ports=80"} {
		e.expectStatus(400, "BadRequest", "pod unscheduled does not have a host assigned", "POST", pods+"/unscheduled/"+sub, nil)
		e.expectStatus(404, "NotFound", `pods "nowhere" not found`, "POST", pods+"/lost/"+sub, nil)
		e.expectStatus(404, "NotFound", `pods "missing" not found`, "POST", pods+"/missing/"+sub, nil)
		e.expectStatus(405, "MethodNotAllowed", "", "PUT", pods+"/unscheduled/"+sub, "{}")
		e.expectStatus(400, "BadRequest", "dryRun is not supported", "POST", pods+"/unscheduled/"+sub+"&dryRun=All", nil)
	}
	e.expectStatus(400, "BadRequest", "container x is not valid for pod unscheduled", "POST", pods+"/unscheduled/exec?command=ls&container=x", nil)
	e.expectStatus(400, "BadRequest", "", "POST", pods+"/unscheduled/exec?command=ls&stdin=maybe", nil)

	// pods/proxy: kube proxies only to a global unicast pod IP.
	loop := podJSON("loop", "", "c")
	e.must(201, "POST", pods, loop)
	e.must(200, "PATCH", pods+"/loop/status", `{"status":{"podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}`,
		"Content-Type", "application/merge-patch+json")
	e.expectStatus(400, "BadRequest", "address not allowed", "GET", pods+"/loop/proxy/", nil)
	e.expectStatus(400, "BadRequest", "address not allowed", "GET", pods+"/unscheduled/proxy", nil)
	e.expectStatus(400, "BadRequest", `invalid pod request "a:b:c:d"`, "GET", pods+"/a:b:c:d/proxy", nil)

	// services/proxy: endpoints come from EndpointSlices.
	e.must(201, "POST", "/api/v1/namespaces/default/services", map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"ports": []any{map[string]any{"port": 80}}}})
	e.expectStatus(503, "ServiceUnavailable", `no endpoints available for service "web"`, "GET", "/api/v1/namespaces/default/services/web/proxy/", nil)
	e.expectStatus(503, "ServiceUnavailable", `no service port 81 found for service "web"`, "GET", "/api/v1/namespaces/default/services/web:81/proxy/", nil)
	e.expectStatus(404, "NotFound", `services "nope" not found`, "GET", "/api/v1/namespaces/default/services/nope:80/proxy/", nil)

	// nodes/proxy: loopback kubelets are refused.
	e.must(201, "POST", "/api/v1/nodes", nodeJSON("local", "127.0.0.1", 10250))
	e.expectStatus(400, "BadRequest", "address not allowed", "GET", "/api/v1/nodes/local/proxy/healthz", nil)
	e.expectStatus(404, "NotFound", `nodes "gone" not found`, "GET", "/api/v1/nodes/gone/proxy/", nil)
	// OPTIONS is routed to proxies (kube's proxyMethods), not elsewhere.
	e.expectStatus(400, "BadRequest", "address not allowed", "OPTIONS", "/api/v1/nodes/local/proxy/", nil)
}

// fakeKubelet serves /containerLogs over TLS with its own CA; the
// returned option points the server's kubelet client at that CA.
func fakeKubelet(t *testing.T) (port int, seen chan string, opt envOption) {
	seen = make(chan string, 10)
	k := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.URL.RequestURI()
		fmt.Fprintf(w, "line 1\nline 2\n")
	}))
	t.Cleanup(k.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: k.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(k.Listener.Addr().String())
	port, _ = strconv.Atoi(p)
	return port, seen, func(c *Config) {
		kc := kubeletConfig()
		kc.TLSClientConfig.CAFile = ca
		c.KubeletClient = &kc
	}
}

// TestPodLogFromKubelet: pods/log streams what the pod's kubelet answers
// at kube's path, with kube's query; kube's default kubelet client (no CA)
// does not verify the kubelet's certificate, one with a CA does (500).
func TestPodLogFromKubelet(t *testing.T) {
	port, seen, opt := fakeKubelet(t)
	e := newEnv(t, opt)
	e.must(201, "POST", "/api/v1/nodes", nodeJSON("n1", "127.0.0.1", port))
	pods := "/api/v1/namespaces/default/pods"
	e.must(201, "POST", pods, podJSON("p", "n1", "c"))
	r := e.do("GET", pods+"/p/log?tailLines=1&timestamps=true", nil)
	if r.code != 200 || string(r.body) != "line 1\nline 2\n" || r.hdr.Get("Content-Type") != "text/plain" {
		t.Fatalf("log: %d %q %v", r.code, r.body, r.hdr)
	}
	if got := <-seen; got != "/containerLogs/default/p/c?stream=All&tailLines=1&timestamps=true" &&
		got != "/containerLogs/default/p/c?tailLines=1&timestamps=true" {
		t.Errorf("kubelet asked for %s", got)
	}

	// kube's default client (no kubelet CA) does not verify the
	// kubelet's certificate; one with another CA refuses it: 500.
	otherCA := func(c *Config) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"}, IsCA: true,
			BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		ca := filepath.Join(t.TempDir(), "other.crt")
		if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		kc := kubeletConfig()
		kc.TLSClientConfig.CAFile = ca
		c.KubeletClient = &kc
	}
	for i, o := range []envOption{func(*Config) {}, otherCA} {
		e2 := newEnv(t, o)
		e2.must(201, "POST", "/api/v1/nodes", nodeJSON("n1", "127.0.0.1", port))
		e2.must(201, "POST", pods, podJSON("p", "n1", "c"))
		r := e2.do("GET", pods+"/p/log", nil)
		if i == 0 {
			if r.code != 200 || string(r.body) != "line 1\nline 2\n" {
				t.Errorf("default kubelet client: %d %q", r.code, r.body)
			}
			<-seen
			continue
		}
		m := r.json(t)
		if r.code != 500 || !strings.Contains(m["message"].(string), "certificate") {
			t.Errorf("kubelet of another CA: %d %v", r.code, m)
		}
	}
}

// TestExecGetNeedsCreate: as kube 1.37 (AuthorizePodWebsocketUpgradeCreatePermission),
// a GET on exec, attach or portforward (websockets) must also be allowed
// to create the subresource: 403 from kube's check otherwise, before the
// pod is read.
func TestExecGetNeedsCreate(t *testing.T) {
	var asked []string
	noCreate := auth.AuthorizerFunc(func(_ context.Context, u *request.User, info *request.Info) (auth.Decision, string, error) {
		asked = append(asked, info.Verb+" "+info.Resource+"/"+info.Subresource)
		if info.Verb == "create" {
			return auth.DecisionDeny, "no create for you", nil
		}
		return auth.DecisionAllow, "", nil
	})
	e := newEnv(t, func(c *Config) { c.Authorizer = noCreate })
	pods := "/api/v1/namespaces/default/pods"
	e.must(201, "POST", pods, podJSON("p", "", "c"))
	for _, sub := range []string{"exec?command=ls", "attach?stdout=true", "portforward?ports=80"} {
		asked = nil
		e.expectStatus(403, "Forbidden", `pods "p" is forbidden: no create for you`, "GET", pods+"/p/"+sub, nil)
		if len(asked) != 1 || !strings.HasPrefix(asked[0], "create pods/") {
			t.Errorf("%s: asked %v", sub, asked)
		}
		// POST is create already: no second question.
		asked = nil
		e.expectStatus(400, "BadRequest", "pod p does not have a host assigned", "POST", pods+"/p/"+sub, nil)
		if len(asked) != 0 {
			t.Errorf("%s: POST asked %v", sub, asked)
		}
	}
}

// FuzzConnectOptions: any query (and proxy path) decodes into kube's
// options for each connect subresource or is kube's 400, never a panic.
func FuzzConnectOptions(f *testing.F) {
	f.Add("/api/v1/namespaces/ns/pods/p/proxy/a/b/", "container=c&follow=true&tailLines=10&sinceSeconds=5")
	f.Add("/api/v1/namespaces/ns/pods/p/exec", "command=ls&command=-l&stdin=true&tty=1&container=x")
	f.Add("/api/v1/nodes/n/proxy", "ports=80&ports=x&sinceTime=2020-01-01T00:00:00Z")
	f.Add("/api/v1/namespaces/ns/services/s:80/proxy//x", "limitBytes=-1&timestamps=maybe&stream=All")
	f.Fuzz(func(t *testing.T, path, query string) {
		r, err := http.NewRequest("GET", "https://h/", nil)
		if err != nil {
			return
		}
		r.URL.Path, r.URL.RawQuery = path, query
		info, err := request.Parse(r)
		if err != nil || !info.IsResourceRequest {
			return
		}
		c := &call{r: r}
		for _, opts := range []runtime.Object{&api.PodLogOptions{}, &api.PodExecOptions{}, &api.PodAttachOptions{},
			&api.PodPortForwardOptions{}, &api.PodProxyOptions{}, &api.NodeProxyOptions{}, &api.ServiceProxyOptions{}} {
			err := c.decodeOptions(info, opts, true, "path")
			var st *wire.Status
			if err != nil && (!errors.As(err, &st) || st.Code != 400) {
				t.Fatalf("%T: %v", opts, err)
			}
		}
	})
}

// TestProxiesForward: services/proxy picks a ready endpoint of the
// service's EndpointSlices whose address is one of its pod's IPs, and
// pods/proxy the pod's IP; kube's upgrade-aware proxy forwards the path
// after proxy/ and the query. The proxy transport is kube's but for its
// dialer, which reaches a backend on 127.0.0.1 whatever the address (kube
// refuses loopback endpoints and pod IPs).
func TestProxiesForward(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.RequestURI())
	}))
	t.Cleanup(backend.Close)
	e := newEnv(t)
	var mu sync.Mutex
	var dialed string // the address the proxy meant to reach
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = addr
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, backend.Listener.Addr().String())
	}}
	t.Cleanup(tr.CloseIdleConnections)
	cn := e.srv.connect
	cn.podProxy.ProxyTransport = tr
	cn.serviceProxy.ProxyTransport = tr
	cn.serviceProxy.Redirector = serviceRedirector{s: e.srv, pods: storeGetters{store: e.srv.store}.of("pods"), transport: tr}

	api := "/api/v1/namespaces/default"
	e.must(201, "POST", api+"/services", map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"ports": []any{map[string]any{"name": "http", "port": 80}}}})
	e.must(201, "POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", map[string]any{
		"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata":    map[string]any{"name": "web-1", "labels": map[string]any{"kubernetes.io/service-name": "web"}},
		"addressType": "IPv4",
		"ports":       []any{map[string]any{"name": "http", "port": 8080}},
		"endpoints": []any{map[string]any{"addresses": []any{"10.9.8.7"},
			"targetRef": map[string]any{"kind": "Pod", "namespace": "default", "name": "backend"}}}})
	// The endpoint's pod does not exist yet: not a valid endpoint.
	e.expectStatus(503, "ServiceUnavailable", `no endpoints available for service "web"`, "GET", api+"/services/web:80/proxy/", nil)
	pod := podJSON("backend", "", "c")
	pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["ports"] = []any{map[string]any{"containerPort": 9090}}
	e.must(201, "POST", api+"/pods", pod)
	e.must(200, "PATCH", api+"/pods/backend/status", `{"status":{"podIP":"10.9.8.7","podIPs":[{"ip":"10.9.8.7"}]}}`,
		"Content-Type", mergeCT)
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/services/web:80/proxy/a/b?x=1", "GET 10.9.8.7:8080 /a/b?x=1"},
		{"GET", "/services/web:http/proxy/", "GET 10.9.8.7:8080 /"},
		{"POST", "/services/http:web:80/proxy/post", "POST 10.9.8.7:8080 /post"},
		{"DELETE", "/services/web:80/proxy/d/", "DELETE 10.9.8.7:8080 /d/"},
		{"GET", "/pods/backend/proxy/p?q=2", "GET 10.9.8.7:9090 /p?q=2"},
		{"PUT", "/pods/backend:81/proxy/", "PUT 10.9.8.7:81 /"},
	} {
		r := e.do(tc.method, api+tc.path, nil)
		mu.Lock()
		got := tc.method + " " + dialed + " " + strings.TrimPrefix(string(r.body), tc.method+" ")
		mu.Unlock()
		if r.code != 200 || got != tc.want {
			t.Errorf("%s %s: %d %q, want %q", tc.method, tc.path, r.code, got, tc.want)
		}
	}
	// The port name must be one of the slice's.
	e.expectStatus(503, "ServiceUnavailable", `no endpoints available for service "web"`, "GET", api+"/services/web:other/proxy/", nil)
}
