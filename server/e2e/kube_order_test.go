package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// orderMasks replace the values that differ between two servers by
// nature (uids, times, resourceVersion numbers, allocated addresses)
// and leave every member where it is, so two answers compare byte for
// byte.
var orderMasks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"(resourceVersion|uid|creationTimestamp|time|lastTransitionTime|lastUpdateTime|lastHeartbeatTime|startTime|deletionTimestamp|clusterIP)":"[^"]*"`), `"$1":"x"`},
	{regexp.MustCompile(`"clusterIPs":\["[^"]*"\]`), `"clusterIPs":["x"]`},
	{regexp.MustCompile(`"nodePort":[0-9]+`), `"nodePort":0`},
}

func maskOrder(b []byte) string {
	s := strings.TrimSpace(string(b))
	for _, m := range orderMasks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}

// TestKubeObjectBytesSameAsOurs: kube-apiserver writes a built-in
// object's JSON with its typed encoder (kind, apiVersion, then metadata
// with ObjectMeta's fields in their Go order and the rest in the type's
// order) and a custom resource's as encoding/json of its map (keys in
// order at every depth, resourceVersion among them). serve's answers to
// a create, update, patch, GET, list and watch are the same bytes, but
// for values that differ by nature (uid, times, resourceVersion numbers,
// allocated addresses).
func TestKubeObjectBytesSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	gv := customResourcesSideBySide(t, ns, kube, ours)
	group := strings.Split(gv, "/")[2]
	api := "/api/v1/namespaces/" + ns
	kinds := []struct {
		what, collection, name, body, patch string
	}{
		{"configmap", api + "/configmaps", "cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"b":"1","a":"2"},"annotations":{"x":"y"},"finalizers":["example.com/f"]},"data":{"k":"v"},"binaryData":{"b":"AA=="},"immutable":false}`, `{"metadata":{"labels":{"c":"3"}}}`},
		{"pod", api + "/pods", "pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod","generateName":"p-"},"spec":{"containers":[{"name":"c","image":"busybox","ports":[{"containerPort":80}]}]}}`, `{"metadata":{"annotations":{"a":"b"}}}`},
		{"deployment", "/apis/apps/v1/namespaces/" + ns + "/deployments", "dep", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"dep"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, `{"spec":{"replicas":2}}`},
		{"service", api + "/services", "svc", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}],"selector":{"app":"x"}}}`, `{"metadata":{"labels":{"l":"v"}}}`},
		{"namespace", "/api/v1/namespaces", ns + "-x", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `-x","labels":{"z":"1"}}}`, `{"metadata":{"annotations":{"a":"b"}}}`},
		{"gizmo", gv + "/namespaces/" + ns + "/gizmos", "giz", `{"apiVersion":"` + group + `/v1","kind":"Gizmo","metadata":{"name":"giz","namespace":"` + ns + `","labels":{"b":"1"},"generateName":"g-"},"spec":{"z":1,"a":[2]}}`, `{"spec":{"m":"n"}}`},
		{"gadget", gv + "/gadgets", "gad-" + ns, `{"apiVersion":"` + group + `/v1","kind":"Gadget","metadata":{"name":"gad-` + ns + `"},"spec":{"z":1}}`, `{"metadata":{"labels":{"q":"r"}}}`},
	}
	for _, k := range kinds {
		var answers [2][]string
		for i, c := range []*rawClient{kube, ours} {
			add := func(what string, code int, b []byte) {
				answers[i] = append(answers[i], what+": "+http.StatusText(code)+" "+maskOrder(b))
			}
			code, _, b := c.send("POST", k.collection, jsonCT, "application/json", k.body)
			add("create", code, b)
			var created struct {
				Metadata struct{ ResourceVersion string }
			}
			_ = json.Unmarshal(b, &created)
			t.Cleanup(func() {
				c.send("DELETE", k.collection+"/"+k.name, "", "application/json", "")
			})
			code, _, b = c.send("GET", k.collection+"/"+k.name, "", "application/json", "")
			add("get", code, b)
			put := b
			code, _, b = c.send("PUT", k.collection+"/"+k.name, jsonCT, "application/json", string(put))
			add("update", code, b)
			code, _, b = c.send("PATCH", k.collection+"/"+k.name, "application/merge-patch+json", "application/json", k.patch)
			add("patch", code, b)
			code, _, b = c.send("GET", k.collection+"/"+k.name, "", "application/json", "")
			add("get after patch", code, b)
			list := k.collection + "?fieldSelector=metadata.name%3D" + k.name
			code, _, b = c.send("GET", list, "", "application/json", "")
			add("list", code, b)
			code, _, b = c.send("GET", list+"&watch=1&timeoutSeconds=1&resourceVersion="+created.Metadata.ResourceVersion, "", "application/json", "")
			add("watch", code, b)
		}
		for j := range answers[0] {
			if j >= len(answers[1]) || answers[0][j] != answers[1][j] {
				t.Errorf("%s:\n kube:  %s\n serve: %s", k.what, answers[0][j], answers[1][j])
			}
		}
	}
}
