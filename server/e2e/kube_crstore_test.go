package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestKubeCRStorageVersionSameAsOurs: a CRD whose versions' schemas
// differ (conversion None). kube's storage encoder stores a write made
// through another version than the storage version relabelled and pruned
// by the storage version's schema, and its decoder reads an object
// through another version than the one stored defaulted by the stored
// version's schema and then pruned by the read version's. The same
// writes go to kube and to serve through each version; their answers,
// the objects read back through each version (GET, LIST) and a watch
// through each version must be the same.
func TestKubeCRStorageVersionSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	group := ns + ".crstore.example.com"
	const plural, kind = "swidgets", "SWidget"
	// v1 (stored) knows b and defaults e; v2 knows c and defaults it, and
	// defaults status.phase, which v1 knows without a default.
	crd := multiVersionCRD(group, plural, "swidget", kind, "",
		crdVersion{name: "v1", served: true, storage: true, statusSubresource: true,
			spec:   `"a":{"type":"integer"},"b":{"type":"string"},"e":{"type":"string","default":"e1"}`,
			status: `"ready":{"type":"boolean"},"phase":{"type":"string"}`},
		crdVersion{name: "v2", served: true, statusSubresource: true,
			spec:   `"a":{"type":"integer"},"c":{"type":"string","default":"dc"},"e":{"type":"string"}`,
			status: `"ready":{"type":"boolean"},"phase":{"type":"string","default":"P"}`})
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	v1 := "/apis/" + group + "/v1/namespaces/" + ns + "/" + plural
	v2 := "/apis/" + group + "/v2/namespaces/" + ns + "/" + plural
	obj := func(version, name, rest string) string {
		return `{"apiVersion":"` + group + `/` + version + `","kind":"` + kind + `","metadata":{"name":"` + name + `"}` + rest + `}`
	}
	for _, c := range []*rawClient{kube, ours} {
		createCRD(t, c, crd, plural+"."+group, v1, v2)
	}
	rvs := [2]string{kube.listRV(v1), ours.listRV(v1)}
	const applyCT = "application/apply-patch+yaml"
	var steps []writeStep
	read := func(name string) {
		steps = append(steps,
			writeStep{"get " + name + " at v1", "GET", v1 + "/" + name, "", ""},
			writeStep{"get " + name + " at v2", "GET", v2 + "/" + name, "", ""})
	}
	steps = append(steps,
		writeStep{"create at v2", "POST", v2, jsonCT, obj("v2", "n2", `,"spec":{"a":1,"b":"x","c":"y"}`)},
		writeStep{"create at v2 dry run", "POST", v2 + "?dryRun=All", jsonCT, obj("v2", "d2", `,"spec":{"a":1,"c":"y"}`)},
		writeStep{"create at v1", "POST", v1, jsonCT, obj("v1", "n1", `,"spec":{"a":1,"b":"x"},"status":{"ready":true}`)},
		writeStep{"create at v1 without e", "POST", v2, jsonCT, obj("v2", "m", `,"spec":{"a":2}`)},
	)
	read("n2")
	read("n1")
	read("m")
	steps = append(steps,
		writeStep{"merge patch at v2", "PATCH", v2 + "/n2", mergePatch, `{"spec":{"c":"q","a":5}}`},
		writeStep{"json patch at v2", "PATCH", v2 + "/m", jsonPatch, `[{"op":"add","path":"/spec/c","value":"j"}]`},
		writeStep{"status patch at v2", "PATCH", v2 + "/n1/status", mergePatch, `{"status":{"ready":false}}`},
		writeStep{"apply at v2", "PATCH", v2 + "/ap?fieldManager=m", applyCT, obj("v2", "ap", `,"spec":{"a":6,"c":"k"}`)},
		writeStep{"apply at v1", "PATCH", v1 + "/ap?fieldManager=m", applyCT, obj("v1", "ap", `,"spec":{"a":6,"b":"k"}`)},
		writeStep{"merge patch at v1", "PATCH", v1 + "/n2", mergePatch, `{"spec":{"b":"p"}}`},
		writeStep{"get n2 at v1 with b", "GET", v1 + "/n2", "", ""},
		writeStep{"status patch at v2 of n2", "PATCH", v2 + "/n2/status", mergePatch, `{"status":{"ready":true}}`},
	)
	sendSteps(t, kube, ours, writeView, steps)
	steps = nil
	// Updates name the revision they replace, each server's own.
	for _, u := range []struct{ name, path, name2, rest string }{
		{"update at v2 dry run", v2 + "/n1?dryRun=All", "n1", `,"spec":{"a":4,"c":"w"}`},
		{"update at v2", v2 + "/n1", "n1", `,"spec":{"a":3,"c":"z"}`},
		{"status update at v2", v2 + "/m/status", "m", `,"spec":{"a":9},"status":{"ready":true}`},
		{"update at v1", v1 + "/m", "m", `,"spec":{"a":7,"b":"u"}`},
	} {
		var views [2]string
		for i, c := range []*rawClient{kube, ours} {
			rv := c.listRV(v1 + "/" + u.name2)
			body := `{"apiVersion":"` + group + `/` + strings.Split(strings.TrimPrefix(u.path, "/apis/"+group+"/"), "/")[0] +
				`","kind":"` + kind + `","metadata":{"name":"` + u.name2 + `","resourceVersion":"` + rv + `"}` + u.rest + `}`
			code, m := c.do("PUT", u.path, jsonCT, body)
			views[i] = fmt.Sprintf("%d %s", code, writeView(m))
		}
		t.Logf("%s: kube %s", u.name, views[0])
		if views[0] != views[1] {
			t.Errorf("%s:\nkube %s\nours %s", u.name, views[0], views[1])
		}
	}
	read("n2")
	read("n1")
	read("m")
	read("ap")
	steps = append(steps,
		writeStep{"list at v1", "GET", v1, "", ""},
		writeStep{"list at v2", "GET", v2, "", ""},
	)
	sendSteps(t, kube, ours, writeView, steps)
	// Each version's watch sees every write as that version reads it.
	for _, path := range []string{v1, v2} {
		compareWatches(t, kube, ours, path+"?watch=1&timeoutSeconds=1&resourceVersion=", rvs)
	}

	// v2 becomes the storage version: objects stored in v1 stay so, and
	// are read as before; new writes are stored in v2, and read through
	// v2 get its defaults again, read through v1 v2's then v1's pruning.
	flip := `[{"op":"replace","path":"/spec/versions/0/storage","value":false},{"op":"replace","path":"/spec/versions/1/storage","value":true}]`
	for _, c := range []*rawClient{kube, ours} {
		if code, m := c.do("PATCH", crds+"/"+plural+"."+group, jsonPatch, flip); code != http.StatusOK {
			t.Fatalf("flip storage: %d %v", code, m)
		}
		// Stored in v2 once a dry run at v1 loses b (v2 does not know it).
		c.await(v1+"?dryRun=All", obj("v1", "probe", `,"spec":{"a":1,"b":"x"}`), func(code int, m map[string]any) bool {
			return code == http.StatusCreated && jsonAt(m, "spec.b") == "-"
		})
	}
	rvs = [2]string{kube.listRV(v1), ours.listRV(v1)}
	steps = []writeStep{
		{"create at v1 stored in v2", "POST", v1, jsonCT, obj("v1", "f1", `,"spec":{"a":1,"b":"x"}`)},
		{"create at v2 stored in v2", "POST", v2, jsonCT, obj("v2", "f2", `,"spec":{"a":1}`)},
		{"patch at v1 of one stored in v1", "PATCH", v1 + "/n2", mergePatch, `{"spec":{"a":8}}`},
	}
	for _, n := range []string{"f1", "f2", "n2", "m"} {
		read(n)
	}
	steps = append(steps,
		writeStep{"list at v1 after the flip", "GET", v1, "", ""},
		writeStep{"list at v2 after the flip", "GET", v2, "", ""},
	)
	sendSteps(t, kube, ours, writeView, steps)
	for _, path := range []string{v1, v2} {
		compareWatches(t, kube, ours, path+"?watch=1&timeoutSeconds=1&resourceVersion=", rvs)
	}
}
