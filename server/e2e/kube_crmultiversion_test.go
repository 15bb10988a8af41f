package e2e

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// crdVersion is one version of a CRD multiVersionCRD builds: whether it
// is served and stored, whether it has a status subresource, and the
// properties (JSON members) of its spec and status, with more members of
// spec's schema (a default, x-kubernetes-validations) in specExtra.
type crdVersion struct {
	name              string
	served, storage   bool
	statusSubresource bool
	spec, status      string
	specExtra         string
}

// createCRD creates crd (named name) on c's server, deletes it when t
// ends, and waits until each of paths, its versions' collections, lists
// and the CRD is Established: kube serves a CRD's resource once its names
// are accepted, and its establishing controller writes the condition a
// moment later, so a list of CRDs taken before that write left it to a
// watch from the list's resourceVersion, on kube alone.
func createCRD(t *testing.T, c *rawClient, crd, name string, paths ...string) {
	t.Helper()
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	if code, m := c.do("POST", crds, jsonCT, crd); code != http.StatusCreated {
		t.Fatalf("crd: %d %v", code, m)
	}
	t.Cleanup(func() { c.do("DELETE", crds+"/"+name, "", "") })
	for _, p := range paths {
		c.waitOK(p)
	}
	if code, m := c.poll(crds+"/"+name, crdEstablished); !crdEstablished(m) {
		t.Fatalf("crd %s not established: %d %v", name, code, m["status"])
	}
}

// multiVersionCRD is a namespaced CRD of group whose versions' schemas
// differ; conversion is its spec.conversion member ("" for None).
func multiVersionCRD(group, plural, singular, kind, conversion string, versions ...crdVersion) string {
	var vs []string
	for _, v := range versions {
		s := `{"name":"` + v.name + `","served":` + strconv.FormatBool(v.served) + `,"storage":` + strconv.FormatBool(v.storage) + `,`
		if v.statusSubresource {
			s += `"subresources":{"status":{}},`
		}
		s += `"schema":{"openAPIV3Schema":{"type":"object","properties":{` +
			`"spec":{"type":"object","properties":{` + v.spec + `}` + v.specExtra + `},` +
			`"status":{"type":"object","properties":{` + v.status + `}}}}}}`
		vs = append(vs, s)
	}
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + `.` + group + `"},
		"spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"` + plural + `","singular":"` + singular + `","kind":"` + kind + `"},
		"versions":[
		` + strings.Join(vs, `,
		`) + `]`
	if conversion != "" {
		crd += `,"conversion":` + conversion
	}
	return crd + `}}`
}

// TestKubeCRMultiVersionEdgesSameAsOurs: a CRD whose versions' schemas
// differ, v1 stored (defaulting spec.e) and v2 served (defaulting spec.c,
// with a transition rule on spec.c), under conversion None and under a
// conversion webhook (which only relabels). kube's storage decoder prunes
// and defaults a stored object by the schema of the version stored, then
// converts it (the webhook sees the stored version's defaults) and prunes
// it by the read version's schema, without that version's defaults; the
// object an update or patch through v2 replaces is read so, and is
// oldSelf to the transition rule. A dry-run create through v2 naming a
// resourceVersion is answered as kube's dry-run storage copies it:
// through the storage codec. The same requests go to kube and to serve.
func TestKubeCRMultiVersionEdgesSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	hook := newConvHook(t)
	webhook := `{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],` +
		`"clientConfig":{"url":"` + hook.srv.URL + `/convert","caBundle":"` + base64.StdEncoding.EncodeToString(hook.ca) + `"}}}`
	// c may change only from nothing: oldSelf without c (as kube reads
	// an object stored in v1 through v2) lets any c through; oldSelf
	// with v2's default for c does not.
	const rule = `,"x-kubernetes-validations":[{"rule":"!has(oldSelf.c) || self.c == oldSelf.c","message":"c is set once"}]`
	for _, conv := range []struct{ name, conversion string }{{"none", ""}, {"webhook", webhook}} {
		t.Run(conv.name, func(t *testing.T) {
			group := ns + "-" + conv.name + ".crmv.example.com"
			const plural, kind = "mwidgets", "MWidget"
			crd := multiVersionCRD(group, plural, "mwidget", kind, conv.conversion,
				crdVersion{name: "v1", served: true, storage: true,
					spec: `"a":{"type":"integer"},"e":{"type":"string","default":"e1"}`},
				crdVersion{name: "v2", served: true,
					spec: `"a":{"type":"integer"},"c":{"type":"string","default":"dc"},"e":{"type":"string"}`, specExtra: rule})
			v1 := "/apis/" + group + "/v1/namespaces/" + ns + "/" + plural
			v2 := "/apis/" + group + "/v2/namespaces/" + ns + "/" + plural
			obj := func(version, name, meta, rest string) string {
				return `{"apiVersion":"` + group + `/` + version + `","kind":"` + kind + `","metadata":{"name":"` + name + `"` + meta + `}` + rest + `}`
			}
			for _, c := range []*rawClient{kube, ours} {
				createCRD(t, c, crd, plural+"."+group, v1, v2)
			}
			steps := []writeStep{
				// Stored in v1 without e (v2 has no default for it)
				// and without c (v1 does not know it).
				{"create at v2", "POST", v2, jsonCT, obj("v2", "n", "", `,"spec":{"a":1}`)},
				{"create at v2 to patch", "POST", v2, jsonCT, obj("v2", "p", "", `,"spec":{"a":1}`)},
				{"create at v1", "POST", v1, jsonCT, obj("v1", "o", "", `,"spec":{"a":1}`)},
				{"get n at v1", "GET", v1 + "/n", "", ""},
				{"get n at v2", "GET", v2 + "/n", "", ""},
				{"get o at v2", "GET", v2 + "/o", "", ""},
				{"list at v2", "GET", v2, "", ""},
				{"merge patch at v2 setting c", "PATCH", v2 + "/p", mergePatch, `{"spec":{"c":"z"}}`},
				{"dry-run create at v2 with a resourceVersion", "POST", v2 + "?dryRun=All", jsonCT, obj("v2", "d", `,"resourceVersion":"7"`, `,"spec":{"a":1,"c":"y"}`)},
				{"dry-run create at v2", "POST", v2 + "?dryRun=All", jsonCT, obj("v2", "d", "", `,"spec":{"a":1,"c":"y"}`)},
				{"dry-run create at v1 with a resourceVersion", "POST", v1 + "?dryRun=All", jsonCT, obj("v1", "d", `,"resourceVersion":"7"`, `,"spec":{"a":1}`)},
			}
			sendSteps(t, kube, ours, writeView, steps)
			// An update through v2 setting c names the revision it
			// replaces, each server's own.
			var views [2]string
			for i, c := range []*rawClient{kube, ours} {
				rv := c.listRV(v1 + "/n")
				code, m := c.do("PUT", v2+"/n", jsonCT, obj("v2", "n", `,"resourceVersion":"`+rv+`"`, `,"spec":{"a":2,"c":"z"}`))
				views[i] = fmt.Sprintf("%d %s", code, writeView(m))
			}
			t.Logf("update at v2 setting c: kube %s", views[0])
			if views[0] != views[1] {
				t.Errorf("update at v2 setting c:\nkube %s\nours %s", views[0], views[1])
			}
			sendSteps(t, kube, ours, writeView, []writeStep{
				{"get n at v2 after", "GET", v2 + "/n", "", ""},
				{"get p at v1 after", "GET", v1 + "/p", "", ""},
			})
		})
	}
}
