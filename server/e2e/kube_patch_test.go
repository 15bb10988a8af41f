package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestKubePatchSameAsOurs sends the same patches — JSON, merge and
// strategic merge, valid and not — to a real kube-apiserver and to
// listwatch, one after the other on the same objects, and requires the
// same answer from both: the Status (code, reason, message, details) of
// a refusal, or the patched object, server-chosen values (uid,
// resourceVersion, timestamps) aside.
func TestKubePatchSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	const group = "patchtest.example.com"
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"knobs.` + group + `"},
		"spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"knobs","singular":"knob","kind":"Knob"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	for _, c := range []*rawClient{kube, ours} {
		if code, m := c.do("POST", crds, jsonCT, crd); code != http.StatusCreated {
			t.Fatalf("crd: %d %v", code, m)
		}
		t.Cleanup(func() { c.do("DELETE", crds+"/knobs."+group, "", "") })
	}
	for _, c := range []*rawClient{kube, ours} {
		c.waitOK("/apis/" + group + "/v1/namespaces/" + ns + "/knobs")
	}

	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	deps := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	pods := "/api/v1/namespaces/" + ns + "/pods"
	knobs := "/apis/" + group + "/v1/namespaces/" + ns + "/knobs"
	const smp = "application/strategic-merge-patch+json"
	sendSteps(t, kube, ours, comparable, []writeStep{
		{"create cm", "POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"x":"y"}},"data":{"a":"1","b":"2"}}`},
		{"create deployment", "POST", deps, jsonCT, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","finalizers":["example.com/one"]},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},
			"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c1","image":"nginx","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"ports":[{"containerPort":80}]},{"name":"c2","image":"busybox"}]}}}}`},
		{"create pod", "POST", pods, jsonCT, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":53,"protocol":"UDP"}]}]}}`},
		{"create knob", "POST", knobs, jsonCT, `{"apiVersion":"` + group + `/v1","kind":"Knob","metadata":{"name":"k"},"spec":{"list":[1,2,3],"m":{"a":1,"b":{"c":2}}}}`},

		// Merge patches.
		{"merge add key", "PATCH", cms + "/cm", mergePatch, `{"data":{"c":"3"}}`},
		{"merge null deletes", "PATCH", cms + "/cm", mergePatch, `{"data":{"a":null}}`},
		{"merge null labels", "PATCH", cms + "/cm", mergePatch, `{"metadata":{"labels":null}}`},
		{"merge invalid JSON", "PATCH", cms + "/cm", mergePatch, `{"data":`},
		{"merge array", "PATCH", cms + "/cm", mergePatch, `[1,2]`},
		{"merge string", "PATCH", cms + "/cm", mergePatch, `"s"`},
		{"merge null", "PATCH", cms + "/cm", mergePatch, `null`},
		{"merge wrong type", "PATCH", cms + "/cm", mergePatch, `{"data":{"k":1}}`},
		{"merge other kind", "PATCH", cms + "/cm", mergePatch, `{"kind":"Pod"}`},
		{"merge other group", "PATCH", cms + "/cm", mergePatch, `{"apiVersion":"apps/v1"}`},
		{"merge unknown field warns", "PATCH", cms + "/cm", mergePatch, `{"foo":1,"data":{"w":"1"}}`},
		{"merge unknown field strict", "PATCH", cms + "/cm?fieldValidation=Strict", mergePatch, `{"foo":1}`},
		{"merge duplicate key strict", "PATCH", cms + "/cm?fieldValidation=Strict", mergePatch, `{"data":{"d":"1","d":"2"}}`},
		{"merge stale resourceVersion", "PATCH", cms + "/cm", mergePatch, `{"metadata":{"resourceVersion":"1"}}`},
		{"merge other name", "PATCH", cms + "/cm", mergePatch, `{"metadata":{"name":"other"}}`},
		{"merge other kind", "PATCH", cms + "/cm", mergePatch, `{"kind":"Secret"}`},
		{"merge missing object", "PATCH", cms + "/missing", mergePatch, `{"data":{"a":"1"}}`},
		{"merge list replaces", "PATCH", knobs + "/k", mergePatch, `{"spec":{"list":[9],"m":{"b":{"c":null,"d":3}}}}`},
		{"merge null on custom resource", "PATCH", knobs + "/k", mergePatch, `{"spec":{"m":null}}`},

		// JSON patches.
		{"json add", "PATCH", cms + "/cm", jsonPatch, `[{"op":"add","path":"/data/e","value":"5"}]`},
		{"json remove missing", "PATCH", cms + "/cm", jsonPatch, `[{"op":"remove","path":"/data/zzz"}]`},
		{"json test fails", "PATCH", cms + "/cm", jsonPatch, `[{"op":"test","path":"/data/e","value":"6"}]`},
		{"json test then replace", "PATCH", cms + "/cm", jsonPatch, `[{"op":"test","path":"/data/e","value":"5"},{"op":"replace","path":"/data/e","value":"6"}]`},
		{"json move", "PATCH", cms + "/cm", jsonPatch, `[{"op":"move","from":"/data/e","path":"/data/f"}]`},
		{"json copy", "PATCH", cms + "/cm", jsonPatch, `[{"op":"copy","from":"/data/f","path":"/data/g"}]`},
		{"json unknown op", "PATCH", cms + "/cm", jsonPatch, `[{"op":"frob","path":"/data/g"}]`},
		{"json not an array", "PATCH", cms + "/cm", jsonPatch, `{"op":"add","path":"/data/h","value":"1"}`},
		{"json add under missing parent", "PATCH", cms + "/cm", jsonPatch, `[{"op":"add","path":"/metadata/annotations/x","value":"1"}]`},
		{"json unknown op field warns", "PATCH", cms + "/cm", jsonPatch, `[{"op":"add","path":"/data/h","value":"1","extra":1}]`},
		{"json unknown op field strict", "PATCH", cms + "/cm?fieldValidation=Strict", jsonPatch, `[{"op":"add","path":"/data/i","value":"1","extra":1}]`},
		{"json replace missing", "PATCH", cms + "/cm", jsonPatch, `[{"op":"replace","path":"/data/nope","value":"1"}]`},
		{"json empty", "PATCH", cms + "/cm", jsonPatch, `[]`},
		{"json negative index", "PATCH", knobs + "/k", jsonPatch, `[{"op":"remove","path":"/spec/list/-1"}]`},
		{"json append with dash", "PATCH", knobs + "/k", jsonPatch, `[{"op":"add","path":"/spec/list/-","value":7}]`},
		{"json index out of range", "PATCH", knobs + "/k", jsonPatch, `[{"op":"add","path":"/spec/list/9","value":7}]`},
		{"json bad pointer", "PATCH", knobs + "/k", jsonPatch, `[{"op":"add","path":"spec","value":7}]`},
		{"json wrong type on typed kind", "PATCH", deps + "/d", jsonPatch, `[{"op":"replace","path":"/spec/replicas","value":"two"}]`},

		// Strategic merge patches.
		{"smp add container", "PATCH", deps + "/d", smp, `{"spec":{"template":{"spec":{"containers":[{"name":"c3","image":"redis"}]}}}}`},
		{"smp merge env by name", "PATCH", deps + "/d", smp, `{"spec":{"template":{"spec":{"containers":[{"name":"c1","env":[{"name":"B","value":"22"},{"name":"C","value":"3"}]}]}}}}`},
		{"smp delete container", "PATCH", deps + "/d", smp, `{"spec":{"template":{"spec":{"containers":[{"name":"c2","$patch":"delete"}]}}}}`},
		{"smp setElementOrder", "PATCH", deps + "/d", smp, `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"c3"},{"name":"c1"}]}}}}`},
		{"smp retainKeys", "PATCH", deps + "/d", smp, `{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}`},
		{"smp retainKeys mismatch", "PATCH", deps + "/d", smp, `{"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":{"maxSurge":1}}}}`},
		{"smp retainKeys not a list", "PATCH", deps + "/d", smp, `{"spec":{"strategy":{"$retainKeys":"type"}}}`},
		{"smp setElementOrder not a list", "PATCH", deps + "/d", smp, `{"spec":{"template":{"spec":{"$setElementOrder/containers":"x"}}}}`},
		{"smp replace map", "PATCH", deps + "/d", smp, `{"spec":{"selector":{"$patch":"replace","matchLabels":{"app":"d"}}}}`},
		{"smp unknown directive", "PATCH", deps + "/d", smp, `{"spec":{"$patch":"frob"}}`},
		{"smp primitive list merge", "PATCH", deps + "/d", smp, `{"metadata":{"finalizers":["example.com/two"]}}`},
		{"smp deleteFromPrimitiveList", "PATCH", deps + "/d", smp, `{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/one"]}}`},
		{"smp wrong type", "PATCH", deps + "/d", smp, `{"spec":{"replicas":"x"}}`},
		{"smp unknown field strict", "PATCH", deps + "/d?fieldValidation=Strict", smp, `{"spec":{"bogus":1}}`},
		{"smp duplicate key strict", "PATCH", deps + "/d?fieldValidation=Strict", smp, `{"spec":{"replicas":2,"replicas":3}}`},
		{"smp ports by containerPort", "PATCH", pods + "/p", smp, `{"spec":{"containers":[{"name":"c","ports":[{"containerPort":53,"protocol":"TCP"}]}]}}`},
		{"smp invalid JSON", "PATCH", deps + "/d", smp, `{`},
		{"smp on custom resource", "PATCH", knobs + "/k", smp, `{"spec":{"a":1}}`},
		{"unknown patch type", "PATCH", cms + "/cm", "text/plain", `x`},
		{"merge patch on status", "PATCH", deps + "/d/status", mergePatch, `{"status":{"replicas":5},"spec":{"replicas":9}}`},
		{"smp on scale", "PATCH", deps + "/d/scale", smp, `{"spec":{"replicas":4}}`},
		{"json patch on scale", "PATCH", deps + "/d/scale", jsonPatch, `[{"op":"replace","path":"/spec/replicas","value":3}]`},
		// An empty managedFields resets them on a built-in kind, whatever
		// the patch type; a custom resource's decoder drops it first, so
		// there only [{}] resets them.
		{"smp empty managedFields", "PATCH", cms + "/cm?fieldManager=clearer", smp, `{"metadata":{"managedFields":[]}}`},
		{"merge empty managedFields on custom resource", "PATCH", knobs + "/k?fieldManager=clearer", mergePatch, `{"metadata":{"managedFields":[]}}`},
		{"json empty managedFields on custom resource", "PATCH", knobs + "/k?fieldManager=clearer", jsonPatch, `[{"op":"replace","path":"/metadata/managedFields","value":[]}]`},
		{"smp empty managedFields on deployment", "PATCH", deps + "/d?fieldManager=clearer", smp, `{"metadata":{"managedFields":[]},"spec":{"replicas":2}}`},
		{"final deployment", "GET", deps + "/d", "", ``},
		{"final configmap", "GET", cms + "/cm", "", ``},
		{"final knob", "GET", knobs + "/k", "", ``},
	})
}

// comparable is the JSON of a response without what each server chooses
// for itself, also where a message quotes an object: uids,
// resourceVersions and times, and what kube's admission plugins (not
// served by listwatch) add to pods.
func comparable(m map[string]any) string {
	if md, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"uid", "resourceVersion", "creationTimestamp"} {
			delete(md, k)
		}
		if mfs, ok := md["managedFields"].([]any); ok {
			for _, mf := range mfs {
				if mf, ok := mf.(map[string]any); ok {
					delete(mf, "time")
				}
			}
			// Compared as a set: kube's field manager orders the
			// entries of one operation by their time in seconds, so
			// their order depends on when a second began, on either
			// server.
			sort.Slice(mfs, func(i, j int) bool { return jsonOf(mfs[i]) < jsonOf(mfs[j]) })
		}
	}
	if m["kind"] == "Pod" {
		if sp, ok := m["spec"].(map[string]any); ok {
			for _, k := range []string{"tolerations", "priority", "preemptionPolicy"} {
				delete(sp, k)
			}
		}
	}
	if d, ok := m["details"].(map[string]any); ok {
		delete(d, "uid")
	}
	b, _ := json.Marshal(m)
	return quotedServerValues.ReplaceAllString(strings.ReplaceAll(string(b), `\\\"`, `"`), `$1"X"`)
}

// quotedServerValues matches a server-chosen value, in the object or in an
// object a message quotes: a condition's lastTransitionTime (a binding's
// PodScheduled) is the second the server wrote it, which differs between
// two servers when a second begins between their writes.
var quotedServerValues = regexp.MustCompile(`("(?:uid|resourceVersion|creationTimestamp|time|lastTransitionTime)":)"[^"]*"`)

// TestKubePatchTypeMetaSameAsOurs sends JSON, merge and strategic merge
// patches that remove an object's apiVersion or kind to kube-apiserver
// and to serve, and requires the same code, Warning headers and answer.
// A built-in object without apiVersion is decoded into its internal Go
// type, which knows none of its members but kind, so it has no name
// (400), each member unknown to it a warning (a 422 under Strict); a
// custom resource without kind (or with a kind or apiVersion that is not
// a string) is 422 Invalid "patch", one without apiVersion an object
// kube's store cannot type (500, after the name, namespace and
// resourceVersion checks), one with another apiVersion refused by the
// custom resource validator (422, named by the patched group). A
// strategic merge patch changing a built-in object's apiVersion or kind
// changes nothing (kube converts the result to its internal type).
func TestKubePatchTypeMetaSameAsOurs(t *testing.T) {
	t.Parallel()
	x := newPatchTargets(t)
	cms, deps, ws := x.cms, x.deps, x.ws
	const smp = "application/strategic-merge-patch+json"
	x.compare(t, []patchStep{
		{cms + "/cm", mergePatch, `{"apiVersion":null}`},
		{cms + "/cm?fieldValidation=Strict", mergePatch, `{"apiVersion":null}`},
		{cms + "/cm?fieldValidation=Ignore", mergePatch, `{"apiVersion":""}`},
		{cms + "/cm", jsonPatch, `[{"op":"remove","path":"/apiVersion"}]`},
		{cms + "/cm", jsonPatch, `[{"op":"remove","path":"/apiVersion"},{"op":"add","path":"/name","value":"other"}]`},
		{cms + "/cm?dryRun=All", jsonPatch, `[{"op":"remove","path":"/apiVersion"},{"op":"add","path":"/name","value":"cm"}]`},
		{deps + "/d", mergePatch, `{"apiVersion":null,"kind":null}`},
		{cms + "/cm", mergePatch, `{"kind":null}`},
		{cms + "/cm", jsonPatch, `[{"op":"remove","path":"/kind"}]`},
		{deps + "/d", smp, `{"apiVersion":null,"kind":null}`},
		{ws + "/w", mergePatch, `{"kind":null}`},
		{ws + "/w?fieldValidation=Strict", mergePatch, `{"kind":null,"x":1}`},
		{ws + "/w", mergePatch, `{"kind":""}`},
		{ws + "/w", jsonPatch, `[{"op":"remove","path":"/kind"}]`},
		{ws + "/w", mergePatch, `{"kind":5}`},
		{ws + "/w", mergePatch, `{"apiVersion":5}`},
		{ws + "/w", mergePatch, `{"kind":null,"metadata":{"name":"other"}}`},
		{ws + "/w", mergePatch, `{"apiVersion":null}`},
		{ws + "/w", mergePatch, `{"apiVersion":""}`},
		{ws + "/w", jsonPatch, `[{"op":"remove","path":"/apiVersion"}]`},
		{ws + "/w", mergePatch, `{"apiVersion":null,"kind":null}`},
		{ws + "/w", mergePatch, `{"apiVersion":null,"metadata":{"labels":{"a":"1","a":"2"}}}`},
		{ws + "/w", mergePatch, `{"apiVersion":null,"metadata":{"name":"other"}}`},
		{ws + "/w", mergePatch, `{"apiVersion":null,"metadata":{"namespace":"other"}}`},
		{ws + "/w", mergePatch, `{"apiVersion":null,"metadata":{"resourceVersion":"1"}}`},
		{ws + "/w/status", mergePatch, `{"apiVersion":null}`},
		{ws + "/w", smp, `{"apiVersion":null}`},
		// Another apiVersion or kind.
		{ws + "/w", mergePatch, `{"apiVersion":"other.example.com/v1"}`},
		{ws + "/w", mergePatch, `{"apiVersion":"other.example.com/v1","kind":"Other"}`},
		{ws + "/w", mergePatch, `{"apiVersion":"a/b/c"}`},
		{ws + "/w", mergePatch, `{"apiVersion":"v1"}`},
		{ws + "/w", mergePatch, `{"kind":"Other"}`},
		{ws + "/w", jsonPatch, `[{"op":"replace","path":"/apiVersion","value":"other.example.com/v1"}]`},
		{cms + "/cm", mergePatch, `{"apiVersion":"v2"}`},
		{cms + "/cm", mergePatch, `{"apiVersion":"apps/v1"}`},
		{cms + "/cm", mergePatch, `{"kind":"Secret"}`},
		{deps + "/d", smp, `{"apiVersion":"apps/v1beta1"}`},
		{deps + "/d", smp, `{"kind":"StatefulSet"}`},
	})
	// The comparison can fail: kube refuses a custom resource's patch
	// without kind.
	if k := x.kube.patchAnswer(ws+"/w", mergePatch, `{"kind":null}`); !strings.HasPrefix(k, "422 ") {
		t.Errorf("kube's answer to a custom resource without kind: %s", k)
	}
}

// TestKubePatchUIDSameAsOurs: a patch or apply that changes a custom
// resource's uid is refused by kube's BeforeUpdate validation, which
// checks the metadata twice (the rules common to every kind, then the
// custom resource strategy's): the same cause twice, among the object's
// other faults and in kube's order; a built-in kind's strategy reports it
// once.
func TestKubePatchUIDSameAsOurs(t *testing.T) {
	t.Parallel()
	x := newPatchTargets(t)
	const applyCT = "application/apply-patch+yaml"
	const uid = "6b9d0f7e-0000-4000-8000-000000000000"
	w := x.ws + "/w"
	x.compare(t, []patchStep{
		{w, mergePatch, `{"metadata":{"uid":"` + uid + `"}}`},
		{w, jsonPatch, `[{"op":"replace","path":"/metadata/uid","value":"x"}]`},
		{w, mergePatch, `{"metadata":{"uid":"x"},"kind":"Other"}`},
		{w, mergePatch, `{"metadata":{"uid":"x","labels":{"a":"-"}}}`},
		{w, mergePatch, `{"metadata":{"uid":null}}`},
		{w, jsonPatch, `[{"op":"replace","path":"/metadata/uid","value":""}]`},
		{w + "/status", mergePatch, `{"metadata":{"uid":"x"}}`},
		{w + "?fieldManager=m", applyCT, `{"apiVersion":"` + x.grp + `/v1","kind":"Widget","metadata":{"name":"w","uid":"x"}}`},
		{x.cms + "/cm", mergePatch, `{"metadata":{"uid":"` + uid + `"}}`},
		{x.cms + "/cm?fieldManager=m", applyCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","uid":"x"}}`},
	})
	// The comparison can fail: kube reports a custom resource's uid twice.
	if k := x.kube.patchAnswer(w, mergePatch, `{"metadata":{"uid":"x"}}`); strings.Count(k, `"field":"metadata.uid"`) != 2 {
		t.Errorf("kube's answer to a custom resource's new uid: %s", k)
	}
}

// patchTargets are a ConfigMap cm, a Deployment d and a custom resource
// w (a Widget) on kube-apiserver and on serve, for patches to compare.
type patchTargets struct {
	kube, ours         *rawClient
	cms, deps, ws, grp string // collections, and the Widgets' group
}

func newPatchTargets(t *testing.T) patchTargets {
	kube, ours, ns := sideBySide(t)
	ws, widget := widgetsSideBySide(t, ns, `{"spec":{"a":1}}`, kube, ours)
	x := patchTargets{kube: kube, ours: ours, ws: ws, grp: ns + ".example.com",
		cms: "/api/v1/namespaces/" + ns + "/configmaps", deps: "/apis/apps/v1/namespaces/" + ns + "/deployments"}
	for _, c := range []*rawClient{kube, ours} {
		for path, body := range map[string]string{
			x.cms: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"x":"y"}},"data":{"a":"1"}}`,
			x.ws:  widget("w"),
			x.deps: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},
				"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
		} {
			if code, m := c.do("POST", path, jsonCT, body); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", path, code, m)
			}
		}
	}
	return x
}

type patchStep struct{ path, ctype, body string }

// compare sends each step to both servers, one after the other.
func (x patchTargets) compare(t *testing.T, steps []patchStep) {
	t.Helper()
	for _, step := range steps {
		k, o := x.kube.patchAnswer(step.path, step.ctype, step.body), x.ours.patchAnswer(step.path, step.ctype, step.body)
		if k != o {
			t.Errorf("PATCH %s %s:\n kube:  %s\n serve: %s", step.path, step.body, k, o)
		}
	}
}

// patchAnswer is the code, Warning headers and comparable answer of a
// PATCH.
func (c *rawClient) patchAnswer(path, ctype, body string) string {
	c.t.Helper()
	code, hdr, b := c.send("PATCH", path, ctype, "application/json", body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Sprintf("%d %q %q", code, hdr.Values("Warning"), b)
	}
	return fmt.Sprintf("%d %q %s", code, hdr.Values("Warning"), escapedServerValues.ReplaceAllString(comparable(m), `${1}X${2}`))
}

// escapedServerValues matches a server-chosen value in an object a
// message quotes within a quotation (its quotes escaped).
var escapedServerValues = regexp.MustCompile(`(\\"(?:uid|resourceVersion|creationTimestamp|time)\\":\\")[^\\]*(\\")`)
