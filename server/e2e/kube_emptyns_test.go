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

	"k8s.io/client-go/rest"
)

// TestKubeEmptyNamespaceSameAsOurs: kube-apiserver's router takes a path
// whose namespace segment is empty (/api/v1/namespaces//configmaps) as
// namespace "": a GET of the collection lists (or watches) across
// namespaces, a write is the handler's answer to a request without a
// namespace, and authorization judges it cluster-wide. serve answers every
// method on such paths (built-in, group, custom and cluster-scoped
// resources, subresources, watches, two empty segments) as kube does, to
// an admin and to a user allowed only in one namespace.
func TestKubeEmptyNamespaceSameAsOurs(t *testing.T) {
	t.Parallel()
	kcfg, ocfg, kube, ours, ns := sideBySideConfigs(t)
	gv := customResourcesSideBySide(t, ns, kube, ours)
	group := ns + ".example.com"
	label := "lw-emptyns=" + ns
	meta := func(name string) string {
		return `"metadata":{"name":"` + name + `","labels":{"lw-emptyns":"` + ns + `"}}`
	}
	cm := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap",` + meta(name) + `,"data":{"a":"b"}}`
	}
	// An object naming a namespace: kube clears it for a request without one.
	cmIn := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"data":{"a":"b"}}`
	}
	pod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod",` + meta(name) + `,"spec":{"containers":[{"name":"c","image":"i"}]}}`
	}
	deploy := func(name string) string {
		return `{"apiVersion":"apps/v1","kind":"Deployment",` + meta(name) + `,"spec":{"selector":{"matchLabels":{"a":"b"}},` +
			`"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`
	}
	gizmo := func(name string) string {
		return `{"apiVersion":"` + group + `/v1","kind":"Gizmo",` + meta(name) + `,"spec":{"replicas":1}}`
	}
	api, apps, crs := "/api/v1/namespaces/"+ns, "/apis/apps/v1/namespaces/"+ns, gv+"/namespaces/"+ns
	for _, c := range []*rawClient{kube, ours} {
		for _, o := range [][2]string{{api + "/configmaps", cm("x")}, {api + "/pods", pod("x")}, {apps + "/deployments", deploy("x")}, {crs + "/gizmos", gizmo("x")}} {
			if code, m := c.do("POST", o[0], jsonCT, o[1]); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", o[0], code, m)
			}
		}
	}
	rvs := [2]string{kube.listRV("/api/v1/configmaps?labelSelector=" + label), ours.listRV("/api/v1/configmaps?labelSelector=" + label)}

	// Every method on every path, with an empty body and with an object.
	type target struct{ path, object string }
	targets := []target{
		{"/api/v1/namespaces//configmaps", cm("y")},
		{"/api/v1/namespaces//configmaps/x", cm("x")},
		{"/api/v1/namespaces//configmaps", cmIn("y")},
		{"/api/v1/namespaces//configmaps/x", cmIn("x")},
		{"/api/v1/namespaces//configmaps/x/status", cm("x")},
		{"/api/v1/namespaces//configmaps?fieldSelector=metadata.name%3Dx", cm("y")},
		{"/api/v1/namespaces//configmaps?watch=1", ""},
		{"/api/v1/namespaces//configmaps?watch=1&fieldSelector=metadata.name%3Dx", ""},
		{"/api/v1/namespaces//pods", pod("y")},
		{"/api/v1/namespaces//pods/x", pod("x")},
		{"/api/v1/namespaces//pods/x/status", pod("x")},
		{"/api/v1/namespaces//pods/x/log", ""},
		{"/api/v1/namespaces//pods/x/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"x"}}`},
		{"/api/v1/namespaces//pods/x/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"x"},"target":{"kind":"Node","name":"n"}}`},
		{"/api/v1/namespaces//pods/x/ephemeralcontainers", pod("x")},
		{"/api/v1/namespaces//pods/x/exec?command=ls", ""},
		{"/api/v1/namespaces//pods/x/proxy", ""},
		{"/api/v1/namespaces//bindings", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"x"},"target":{"kind":"Node","name":"n"}}`},
		{"/api/v1/namespaces//serviceaccounts/default/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`},
		{"/apis/authorization.k8s.io/v1/namespaces//localsubjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods"}}}`},
		{"/apis/apps/v1/namespaces//deployments", deploy("y")},
		{"/apis/apps/v1/namespaces//deployments/x", deploy("x")},
		{"/apis/apps/v1/namespaces//deployments/x/status", deploy("x")},
		{"/apis/apps/v1/namespaces//deployments/x/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"x"},"spec":{"replicas":2}}`},
		{gv + "/namespaces//gizmos", gizmo("y")},
		{gv + "/namespaces//gizmos/x", gizmo("x")},
		{gv + "/namespaces//gizmos/x/status", gizmo("x")},
		{gv + "/namespaces//gizmos/x/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"x"},"spec":{"replicas":2}}`},
		{gv + "/namespaces//gadgets", ""},
		{gv + "/namespaces//gadgets/x", ""},
		{"/api/v1/namespaces//nodes", ""},
		{"/api/v1/namespaces//nodes/n", ""},
		{"/api/v1/namespaces//namespaces", ""},
		{"/api/v1/namespaces//", ""},
		{"/api/v1/namespaces//status", ""},
		{"/api/v1/namespaces//finalize", ""},
		{"/api/v1/namespaces///configmaps", ""},
		{"/api/v1/namespaces//configmaps//x", ""},
		{"/api/v1/namespaces//configmaps/", ""},
		{"/api/v1/watch/namespaces//configmaps", ""},
		{"/api/v1/watch/namespaces//configmaps/x", ""},
		{"/apis/apps/v1/watch/namespaces//deployments", ""},
		{gv + "/watch/namespaces//gizmos", ""},
	}
	compare := func(who string, kube, ours *rawClient, method, path, ctype, body string) {
		t.Helper()
		watch := strings.Contains(path, "/watch/") || method == "GET" && strings.Contains(path, "watch=")
		if watch {
			path += "&timeoutSeconds=1&labelSelector=" + label
			if !strings.Contains(path, "?") {
				path = strings.Replace(path, "&", "?", 1)
			}
		}
		answer := func(c *rawClient) string {
			if watch {
				// A watch's events, not its bytes (uids, versions).
				code, hdr, b := c.send(method, path, ctype, "application/json", body)
				if code == http.StatusOK {
					return fmt.Sprintf("%d %s %v", code, hdr.Get("Content-Type"), eventsView(c, b))
				}
			}
			return c.exactAnswer(method, path, ctype, body)
		}
		k, o := answer(kube), answer(ours)
		t.Logf("%s %s %s %.60s: kube %.300s", who, method, path, body, k)
		if k != o {
			t.Errorf("%s %s %s %s:\n kube:  %s\n serve: %s", who, method, path, body, k, o)
		}
	}
	for _, tg := range targets {
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			ctype := writeType(method)
			path := tg.path
			if method == "DELETE" && !strings.Contains(path, "/x") {
				// A deletecollection across namespaces: only this test's
				// objects, and only as a dry run.
				path += sep(path) + "dryRun=All&labelSelector=" + label
			}
			if method != "GET" && method != "DELETE" {
				path += sep(path) + "dryRun=All"
			}
			compare("admin", kube, ours, method, path, ctype, "{}")
			if tg.object != "" && method != "GET" && method != "DELETE" {
				body := tg.object
				if method == "PATCH" {
					body = `{"metadata":{"annotations":{"a":"b"}}}`
				}
				compare("admin", kube, ours, method, path, ctype, body)
			}
		}
	}

	// What is listed across namespaces, by an empty namespace: the same
	// objects (of this test's namespace; names only).
	for _, p := range []string{
		"/api/v1/namespaces//configmaps", "/api/v1/namespaces//configmaps?fieldSelector=metadata.name%3Dx",
		"/api/v1/namespaces//pods", "/apis/apps/v1/namespaces//deployments", gv + "/namespaces//gizmos",
		"/api/v1/namespaces//configmaps?labelSelector=" + label, "/api/v1/namespaces//configmaps?limit=1",
	} {
		k, o := kube.namesIn(p, ns), ours.namesIn(p, ns)
		t.Logf("list %s: kube %v", p, k)
		if !slices.Equal(k, o) {
			t.Errorf("list %s:\n kube:  %v\n serve: %v", p, k, o)
		}
	}

	// Watches across namespaces, by an empty namespace: the same events.
	for _, c := range []*rawClient{kube, ours} {
		if code, m := c.do("POST", api+"/configmaps", jsonCT, cm("z")); code != http.StatusCreated {
			t.Fatalf("configmap z: %d %v", code, m)
		}
		if code, m := c.do("DELETE", api+"/configmaps/x", "", ""); code != http.StatusOK {
			t.Fatalf("delete x: %d %v", code, m)
		}
	}
	nameView := func(m map[string]any) string {
		md, _ := m["metadata"].(map[string]any)
		return fmt.Sprintf("%v %v/%v", m["kind"], md["namespace"], md["name"])
	}
	for _, p := range []string{"/api/v1/namespaces//configmaps?watch=1&", "/api/v1/watch/namespaces//configmaps?"} {
		p += "timeoutSeconds=1&labelSelector=" + label + "&resourceVersion="
		k, o := kube.watchEvents(p+rvs[0], nameView), ours.watchEvents(p+rvs[1], nameView)
		t.Logf("watch %s: kube %v", p, k)
		if len(k) == 0 {
			t.Errorf("watch %s: no events from kube", p)
		}
		if !slices.Equal(k, o) {
			t.Errorf("watch %s:\n kube:  %v\n serve: %v", p, k, o)
		}
	}

	// A user allowed everything on these resources in ns, and nothing
	// outside it: an empty namespace is judged cluster-wide.
	user := "lw-emptyns-" + ns
	for _, c := range []*rawClient{kube, ours} {
		role := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"all"},"rules":[` +
			`{"apiGroups":["","apps","` + group + `"],"resources":["*"],"verbs":["*"]}]}`
		binding := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"all"},` +
			`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"all"},` +
			`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"` + user + `"}]}`
		for _, o := range [][2]string{{"roles", role}, {"rolebindings", binding}} {
			if code, m := c.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/"+o[0], jsonCT, o[1]); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", o[0], code, m)
			}
		}
	}
	as := func(cfg *rest.Config) *rawClient {
		cfg = rest.CopyConfig(cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		return newRawClient(t, cfg)
	}
	kubeUser, oursUser := as(kcfg), as(ocfg)
	for _, c := range []*rawClient{kubeUser, oursUser} {
		// The authorizer reads informers: wait until the binding is in
		// effect.
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, _ := c.do("GET", api+"/configmaps", "", "")
			if code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the role binding is not in effect: %d", code)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, tg := range targets {
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			ctype := writeType(method)
			path := tg.path
			if method != "GET" {
				path += sep(path) + "dryRun=All"
			}
			body := tg.object
			if body == "" || method == "PATCH" {
				body = "{}"
			}
			compare("user", kubeUser, oursUser, method, path, ctype, body)
		}
	}
}

// sep is what joins a query parameter to path.
func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

// namesIn lists path and returns the names of the items in namespace ns,
// as "namespace/name", or the answer's code and Status message.
func (c *rawClient) namesIn(path, ns string) []string {
	c.t.Helper()
	code, m := c.do("GET", path, "", "")
	if code != http.StatusOK {
		return []string{fmt.Sprintf("%d %v", code, m["message"])}
	}
	names := []string{fmt.Sprint(m["kind"])}
	items, _ := m["items"].([]any)
	for _, it := range items {
		md, _ := it.(map[string]any)["metadata"].(map[string]any)
		if md["namespace"] == ns {
			names = append(names, fmt.Sprintf("%v/%v", md["namespace"], md["name"]))
		}
	}
	return names
}

// eventsView is each event's type and its object's kind, namespace and
// name, of the watch stream b.
func eventsView(c *rawClient, b []byte) []string {
	c.t.Helper()
	var events []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type   string
			Object struct {
				Kind     string
				Metadata struct{ Namespace, Name string }
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			c.t.Fatalf("watch event %q: %v", sc.Bytes(), err)
		}
		events = append(events, fmt.Sprintf("%s %s %s/%s", ev.Type, ev.Object.Kind, ev.Object.Metadata.Namespace, ev.Object.Metadata.Name))
	}
	return events
}
