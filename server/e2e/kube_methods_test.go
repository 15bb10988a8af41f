package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/wire"
)

// TestKubeNonResourceMethodsSameAsOurs: kube-apiserver serves /version,
// /api and each group version's discovery document as GET routes only,
// and answers another method there (HEAD too) with its router's 405
// Status, in the negotiated media type; /apis, /apis/{group}, OpenAPI and
// a missing group version answer as for GET. serve answers every one of
// them alike: code, content type and, for a Status, reason and message.
func TestKubeNonResourceMethodsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, _ := sideBySide(t)
	paths := []string{
		"/version", "/version/", "/api", "/api/", "/api/v1", "/api/v1/",
		"/apis/apps/v1", "/apis/apps/v1/", "/apis/apps/v9", "/api/v2", "/apis/nope/v1",
		"/apis", "/apis/apps", "/openapi/v2",
	}
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} {
		for _, path := range paths {
			for _, accept := range []string{"application/json", wire.ContentTypeProtobuf} {
				k, o := kube.accepting(method, path, accept, "", ""), ours.accepting(method, path, accept, "", "")
				if k != o {
					t.Errorf("%s %s [%s]:\n kube:  %s\n serve: %s", method, path, accept, k, o)
				}
			}
		}
	}
}

// TestKubeDiscoveryMediaSameAsOurs: a discovery document, or a missing
// one's 404, comes in the media type kube-apiserver negotiates for it
// (protobuf, YAML or JSON), and a group's document is the same protobuf.
func TestKubeDiscoveryMediaSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, _ := sideBySide(t)
	for _, path := range []string{"/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1", "/apis/apps/v9", "/api/v2", "/apis/nope"} {
		for _, accept := range []string{
			wire.ContentTypeProtobuf, "application/yaml", "text/html", "*/*", "application/json",
			"application/vnd.kubernetes.protobuf, application/json", "text/html, application/yaml;q=0.5",
		} {
			k, o := kube.accepting("GET", path, accept, "", ""), ours.accepting("GET", path, accept, "", "")
			if k != o {
				t.Errorf("GET %s [%s]:\n kube:  %s\n serve: %s", path, accept, k, o)
			}
		}
	}
	_, _, k := kube.send("GET", "/apis/apps", "", wire.ContentTypeProtobuf, "")
	_, _, o := ours.send("GET", "/apis/apps", "", wire.ContentTypeProtobuf, "")
	if !bytes.Equal(k, o) {
		t.Errorf("GET /apis/apps in protobuf:\n kube:  %q\n serve: %q", k, o)
	}
}

// TestKubeClusterWideListMethodsSameAsOurs: kube's installer routes the
// list of a namespaced kind across namespaces (/api/v1/configmaps) for
// GET only (list and watch; deletecollection is on the namespaced path),
// so another method there is its router's 405 Status; below it
// (/api/v1/configmaps/x) there is no route at all, a 404.
func TestKubeClusterWideListMethodsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, _ := sideBySide(t)
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		for _, path := range []string{"/api/v1/configmaps", "/apis/apps/v1/deployments", "/api/v1/configmaps/x"} {
			k, o := kube.accepting(method, path, "application/json", jsonCT, "{}"), ours.accepting(method, path, "application/json", jsonCT, "{}")
			if k != o {
				t.Errorf("%s %s:\n kube:  %s\n serve: %s", method, path, k, o)
			}
		}
	}
}

// TestKubeRouteMethodsSameAsOurs: kube's installer registers each path of
// a built-in resource for the methods its storage serves (a /status,
// /scale, pods/ephemeralcontainers, pods/resize or
// certificatesigningrequests/approval GET, PUT and PATCH; pods/binding and
// pods/eviction POST; a /watch/ path GET; HEAD nowhere but the proxies),
// so another method on a routed path is its router's 405 Status (a HEAD's
// with no body), before the body's type or Accept is looked at; a path
// with no route is a 404 whatever the method. The connect subresources
// (log, exec, attach, portforward, the proxies) take their own methods.
// Answers to GET and PUT are compared elsewhere.
func TestKubeRouteMethodsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	api, apps := "/api/v1/namespaces/"+ns, "/apis/apps/v1/namespaces/"+ns
	paths := []string{
		api + "/configmaps", api + "/configmaps/x", "/api/v1/configmaps", api + "/configmaps/x/foo",
		"/api/v1/namespaces/x", "/api/v1/namespaces", "/api/v1/namespaces/x/status", "/api/v1/namespaces/x/finalize",
		apps + "/deployments/x", apps + "/deployments/x/scale", apps + "/deployments/x/status",
		api + "/replicationcontrollers/x/scale", api + "/replicationcontrollers/x/status",
		"/apis/policy/v1/namespaces/" + ns + "/poddisruptionbudgets/x/status",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x/status",
		"/apis/certificates.k8s.io/v1/certificatesigningrequests/x/approval", "/apis/certificates.k8s.io/v1/certificatesigningrequests/x/status",
		api + "/pods/x/status", api + "/pods/x/ephemeralcontainers", api + "/pods/x/resize", api + "/pods/x/binding", api + "/pods/x/eviction",
		api + "/pods/x/log", api + "/pods/x/exec", api + "/pods/x/attach", api + "/pods/x/portforward", api + "/pods/x/proxy", api + "/pods/x/proxy/y",
		api + "/services/x/proxy", api + "/services/x/proxy/y", "/api/v1/nodes/x", "/api/v1/nodes/x/proxy", "/api/v1/nodes/x/proxy/y",
		api + "/serviceaccounts/x/token", api + "/bindings", api + "/bindings/x",
		"/api/v1/componentstatuses", "/api/v1/componentstatuses/x",
		"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x",
		"/api/v1/watch/namespaces/" + ns + "/configmaps", "/api/v1/watch/namespaces/" + ns + "/configmaps/x", "/api/v1/watch/configmaps",
		"/api/v1/watch/configmaps/x", "/api/v1/watch/namespaces/" + ns + "/configmaps/x/status", "/api/v1/watch/componentstatuses",
		"/apis/authorization.k8s.io/v1/watch/selfsubjectaccessreviews",
	}
	// CONNECT is left out: Go's HTTP/2 client sends it without a path.
	for _, method := range []string{"HEAD", "POST", "PATCH", "DELETE", "OPTIONS", "TRACE", "FOO"} {
		for _, path := range paths {
			k, o := kube.routeAnswer(method, path), ours.routeAnswer(method, path)
			if k != o {
				t.Errorf("%s %s:\n kube:  %s\n serve: %s", method, path, k, o)
			}
		}
	}
}

// routeAnswer is accepting for a JSON body of a JSON Status accepted,
// with the body's length: a HEAD's 405 has a Content-Type and a
// Content-Length, and no body. An answer with a resourceVersion (a
// deletecollection's list) has its lengths less that version's, as
// "N+rv": each server's is a number of its own etcd's, and may have a
// digit more than the other's.
func (c *rawClient) routeAnswer(method, path string) string {
	c.t.Helper()
	code, hdr, b := c.send(method, path, jsonCT, "application/json", "{}")
	length, size := hdr.Get("Content-Length"), strconv.Itoa(len(b))
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		md, _ := m["metadata"].(map[string]any)
		if rv, _ := md["resourceVersion"].(string); rv != "" {
			if n, err := strconv.Atoi(length); err == nil {
				length = fmt.Sprintf("%d+rv", n-len(rv))
			}
			size = fmt.Sprintf("%d+rv", len(b)-len(rv))
		}
	}
	out := fmt.Sprintf("%d %s length %s, %s bytes", code, hdr.Get("Content-Type"), length, size)
	if m["kind"] == "Status" {
		out += fmt.Sprintf(" %v %q", m["reason"], m["message"])
	}
	return out
}

// TestKubeCustomResourceMethodsSameAsOurs: kube serves custom resources
// by its CRD handler, not its router, so every method reaches it, read as
// the verb its request info gives: a namespaced resource without a
// namespace is listed and watched only (another verb is the 404 of a path
// nothing serves); a status or scale subresource takes GET, PUT and
// PATCH, another verb there the handler's 405 naming the resource; the
// object and the collection take every verb, so a POST on an object is a
// create (of the body's object), a PUT of the collection the update
// handler's 400 for the missing name, a PATCH there the patch handler's
// 415 or that 400, and OPTIONS, TRACE or another method the 405 of the
// empty verb. Code, content type and the whole Status are compared, for a
// namespaced and a cluster-scoped resource.
func TestKubeCustomResourceMethodsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	gv := customResourcesSideBySide(t, ns, kube, ours)
	group := strings.Split(gv, "/")[2]
	gizmos, gadgets := gv+"/namespaces/"+ns+"/gizmos", gv+"/gadgets"
	paths := []string{
		gizmos, gizmos + "/x", gizmos + "/x/status", gizmos + "/x/scale", gizmos + "/x/foo", gizmos + "/x/status/y",
		gv + "/gizmos", gv + "/gizmos/x", gv + "/gizmos/x/status",
		gadgets, gadgets + "/x", gadgets + "/x/status", gadgets + "/x/scale", gadgets + "/x/foo",
		gv + "/namespaces/" + ns + "/gadgets", gv + "/namespaces/" + ns + "/gadgets/x",
		gv + "/watch/namespaces/" + ns + "/gizmos/x/status", gv + "/watch/gadgets/x/scale",
	}
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "FOO"} {
		for _, p := range paths {
			cts := []string{jsonCT}
			if method == "PATCH" {
				cts = append(cts, "application/merge-patch+json")
			}
			for _, ct := range cts {
				k, o := kube.exactAnswer(method, p, ct, "{}"), ours.exactAnswer(method, p, ct, "{}")
				if k != o {
					t.Errorf("%s %s [%s]:\n kube:  %s\n serve: %s", method, p, ct, k, o)
				}
			}
		}
	}
	// A POST on an object creates the body's object, whatever the path
	// names; the watches take any method, and a name across namespaces.
	for _, r := range []struct{ method, path, body string }{
		{"POST", gizmos + "/x", `{"apiVersion":"` + group + `/v1","kind":"Gizmo","metadata":{"name":"made-by-post"}}`},
		{"GET", gizmos + "/made-by-post", ""},
		{"GET", gizmos + "/x", ""},
		{"POST", gadgets + "/x", `{"apiVersion":"` + group + `/v1","kind":"Gadget","metadata":{"name":"bad"},"spec":{"replicas":"many"}}`},
		{"POST", gadgets + "/x", `{"apiVersion":"` + group + `/v1","kind":"Gadget"}`},
		{"GET", gv + "/watch/gizmos/made-by-post?timeoutSeconds=1", ""},
		{"PUT", gv + "/watch/namespaces/" + ns + "/gizmos?timeoutSeconds=1", "{}"},
		{"OPTIONS", gv + "/watch/gadgets?timeoutSeconds=1", "{}"},
	} {
		k, o := kube.exactAnswer(r.method, r.path, jsonCT, r.body), ours.exactAnswer(r.method, r.path, jsonCT, r.body)
		if k != o {
			t.Errorf("%s %s %s:\n kube:  %s\n serve: %s", r.method, r.path, r.body, k, o)
		}
	}
}

// TestKubeCustomResourcePostOnObjectAdmission: a POST on a custom
// resource's object creates the body's object, but kube's create handler
// names admission's attributes after the path: a ValidatingAdmissionPolicy
// reads request.name as the path's name, and NamespaceLifecycle's refusal
// in a terminating namespace names it.
func TestKubeCustomResourcePostOnObjectAdmission(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	gv := customResourcesSideBySide(t, ns, kube, ours)
	group := strings.Split(gv, "/")[2]
	const vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	const vapb = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
	name := "post-" + ns
	policy := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"` + name + `"},
	 "spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[
	   {"apiGroups":["` + group + `"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["gizmos"]}]},
	  "validations":[{"expression":"request.name != 'refused'","messageExpression":"'request.name ' + request.name + ', object ' + object.metadata.name"}]}}`
	binding := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"` + name + `"},
	 "spec":{"policyName":"` + name + `","validationActions":["Deny"]}}`
	gizmos := gv + "/namespaces/" + ns + "/gizmos"
	gizmo := func(n string) string {
		return `{"apiVersion":"` + group + `/v1","kind":"Gizmo","metadata":{"name":"` + n + `"}}`
	}
	terminating := ns + "-t"
	for i, c := range []*rawClient{kube, ours} {
		t.Cleanup(func() {
			c.do("DELETE", vapb+"/"+name, "", "")
			c.do("DELETE", vap+"/"+name, "", "")
			c.do("PATCH", "/api/v1/namespaces/"+terminating+"/configmaps/held", "application/merge-patch+json", `{"metadata":{"finalizers":null}}`)
		})
		for _, w := range [][2]string{{vap, policy}, {vapb, binding}, {"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + terminating + `"}}`},
			{"/api/v1/namespaces/" + terminating + "/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}`}} {
			if code, m := c.do("POST", w[0], jsonCT, w[1]); code != http.StatusCreated {
				t.Fatalf("POST %s: %d %v", w[0], code, m)
			}
		}
		// The configmap's finalizer holds the namespace in Terminating.
		if code, m := c.do("DELETE", "/api/v1/namespaces/"+terminating, "", ""); code != http.StatusOK {
			t.Fatalf("DELETE namespace: %d %v", code, m)
		}
		// The policy takes effect once the server's admission has seen
		// it: wait for the first denial.
		deadline := time.Now().Add(30 * time.Second)
		for a := c.raw("POST", gizmos+"?dryRun=All", jsonCT, gizmo("refused")); a.code != http.StatusUnprocessableEntity; a = c.raw("POST", gizmos+"?dryRun=All", jsonCT, gizmo("refused")) {
			if time.Now().After(deadline) {
				t.Fatalf("server %d: the policy never denied: %s", i, statusView(a))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, r := range []struct{ path, body string }{
		{gizmos + "/refused", gizmo("other")},
		{gizmos + "/fine", gizmo("refused")},
		{gizmos + "/fine", gizmo("made")},
		{gv + "/namespaces/" + terminating + "/gizmos/x", gizmo("y")},
		{gv + "/namespaces/" + terminating + "/gizmos", gizmo("y")},
	} {
		k, o := kube.exactAnswer("POST", r.path, jsonCT, r.body), ours.exactAnswer("POST", r.path, jsonCT, r.body)
		if k != o {
			t.Errorf("POST %s %s:\n kube:  %s\n serve: %s", r.path, r.body, k, o)
		}
	}
}
