package server

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
)

// crdDoc is a CRD of one served version, v9 (served by no built-in), with
// the names given; empty singular, listKind or shortNames are left out.
func crdDoc(group, plural, singular, kind, listKind string, shortNames ...string) map[string]any {
	names := map[string]any{"plural": plural, "kind": kind}
	if singular != "" {
		names["singular"] = singular
	}
	if listKind != "" {
		names["listKind"] = listKind
	}
	if len(shortNames) > 0 {
		names["shortNames"] = shortNames
	}
	md := map[string]any{"name": plural + "." + group}
	if isProtectedGroup(group) {
		md["annotations"] = map[string]any{apiApprovedAnnotation: "https://github.com/kubernetes/enhancements/pull/1111"}
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": md,
		"spec": map[string]any{
			"group": group, "scope": "Namespaced", "names": names,
			"versions": []any{map[string]any{"name": "v9", "served": true, "storage": true, "schema": anySchema()}},
		},
	}
}

func condition(crd map[string]any, typ string) map[string]any {
	conds, _ := path(crd, "status", "conditions").([]any)
	for _, c := range conds {
		if c.(map[string]any)["type"] == typ {
			return c.(map[string]any)
		}
	}
	return nil
}

// TestCRDShadowingProperty: over random CRD names drawn from the names of
// the built-ins (and fresh ones) and the built-in groups, a CRD is
// established and served exactly when none of its resource names
// (plural, singular, short names) and kind names (kind, listKind) is
// used in its group; otherwise NamesAccepted is False with kube's reason
// and message, and nothing of it is served. Deleting a refused CRD
// deletes nothing else (it used to wipe every CRD when it named the CRDs'
// own storage).
func TestCRDShadowingProperty(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	e.must(201, "POST", "/apis/example.com/v1/namespaces/default/widgets", widget("keep", "v1"))
	e.must(201, "POST", "/api/v1/namespaces/default/configmaps", cm("keep", nil, nil))

	builtins := builtinResources()
	usedRes, usedKinds := map[string]bool{}, map[string]bool{}
	groups := []string{"example.com", "example.k8s.io"}
	var resNames, kindNames []string
	for _, r := range builtins {
		// A CRD's group needs a dot (kube's validation): the names of
		// core, apps, batch and policy cannot conflict with one.
		if !strings.Contains(r.group, ".") {
			continue
		}
		if !slices.Contains(groups, r.group) {
			groups = append(groups, r.group)
		}
		names := append([]string{r.plural, r.singular}, r.shortNames...)
		listKind := r.kind + "List"
		for _, n := range names {
			usedRes[r.group+"/"+n] = true
		}
		usedKinds[r.group+"/"+r.kind], usedKinds[r.group+"/"+listKind] = true, true
		resNames = append(resNames, names...)
		kindNames = append(kindNames, r.kind, listKind)
	}
	usedRes["example.com/widgets"], usedRes["example.com/widget"], usedRes["example.com/wd"] = true, true, true
	usedKinds["example.com/Widget"], usedKinds["example.com/WidgetList"] = true, true
	resNames = append(resNames, "widgets", "widget", "wd")
	kindNames = append(kindNames, "Widget", "WidgetList")

	rng := rand.New(rand.NewPCG(1, uint64(len(builtins))))
	pick := func(pool []string, fresh string) string {
		if rng.IntN(3) == 0 {
			return pool[rng.IntN(len(pool))]
		}
		return fresh
	}
	const cases = 60
	accepted, refused := 0, 0
	for i := range cases {
		group := groups[rng.IntN(len(groups))]
		plural := pick(resNames, fmt.Sprintf("things%d", i))
		singular := pick(resNames, fmt.Sprintf("thing%d", i))
		kind := pick(kindNames, fmt.Sprintf("Thing%d", i))
		listKind := pick(kindNames, fmt.Sprintf("Thing%dList", i))
		short := pick(resNames, fmt.Sprintf("th%d", i))
		if singular == plural || short == plural || short == singular || kind == listKind ||
			plural+"."+group == "widgets.example.com" {
			continue // kube's validation refuses these; not this property
		}
		// Which names conflict, in kube's order; the last one is reported.
		var reason, msg string
		check := func(used map[string]bool, name, why string) {
			if used[group+"/"+name] {
				reason, msg = why, fmt.Sprintf("%q is already in use", name)
			}
		}
		check(usedRes, plural, "PluralConflict")
		check(usedRes, singular, "SingularConflict")
		check(usedRes, short, "ShortNamesConflict")
		check(usedKinds, kind, "KindConflict")
		check(usedKinds, listKind, "ListKindConflict")

		name := plural + "." + group
		desc := fmt.Sprintf("case %d: %s singular=%s kind=%s listKind=%s short=%s", i, name, singular, kind, listKind, short)
		e.must(201, "POST", crdPath, crdDoc(group, plural, singular, kind, listKind, short))
		// Named by the controllers' status writes after the create.
		crd := e.must(200, "GET", crdPath+"/"+name, nil)
		na, est := condition(crd, "NamesAccepted"), condition(crd, "Established")
		served := slices.Contains(discoveryNames(t, e, "/apis/"+group+"/v9"), plural)
		if reason == "" {
			accepted++
			if na["status"] != "True" || est["status"] != "True" || !served {
				t.Fatalf("%s: fresh names refused: %v %v served=%v", desc, na, est, served)
			}
		} else {
			refused++
			if na["status"] != "False" || na["reason"] != reason || na["message"] != msg {
				t.Fatalf("%s: NamesAccepted %v, want False %s %q", desc, na, reason, msg)
			}
			if est["status"] == "True" || est["reason"] != "NotAccepted" || served {
				t.Fatalf("%s: a conflicting CRD is established %v or served (%v)", desc, est, served)
			}
			e.expectStatus(404, "NotFound", "", "GET", "/apis/"+group+"/v9/namespaces/default/"+plural, nil)
		}
		e.deleteCRD(name, nil)
		// Nothing else went with it.
		e.must(200, "GET", crdPath+"/widgets.example.com", nil)
		e.must(200, "GET", "/apis/example.com/v1/namespaces/default/widgets/keep", nil)
		e.must(200, "GET", "/api/v1/namespaces/default/configmaps/keep", nil)
	}
	if accepted < 5 || refused < 5 {
		t.Fatalf("too few cases of one kind: %d accepted, %d refused", accepted, refused)
	}
}

// TestCRDShadowingTheCRDs: the CRD named like the CRDs themselves is
// refused (PluralConflict), serves nothing, and deleting it leaves the
// other CRDs. One stored as established by an older server is not
// served either, and deleting it deletes no CRD.
func TestCRDShadowingTheCRDs(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	shadow := crdDoc(groupCRD, "customresourcedefinitions", "customresourcedefinition",
		"CustomResourceDefinition", "", "crd")
	e.must(201, "POST", crdPath, shadow)
	crd := e.must(200, "GET", crdPath+"/customresourcedefinitions."+groupCRD, nil)
	if na := condition(crd, "NamesAccepted"); na["reason"] != "ListKindConflict" || na["status"] != "False" ||
		na["message"] != `"CustomResourceDefinitionList" is already in use` {
		// listKind (defaulted) is the last conflict kube checks.
		t.Fatalf("NamesAccepted: %v", na)
	}
	e.expectStatus(404, "NotFound", "", "POST", "/apis/apiextensions.k8s.io/v9/customresourcedefinitions",
		map[string]any{"apiVersion": "apiextensions.k8s.io/v9", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "pods.core"}, "spec": map[string]any{"group": ""}})
	e.deleteCRD("customresourcedefinitions.apiextensions.k8s.io", nil)
	e.must(200, "GET", crdPath+"/widgets.example.com", nil)

	// As an older server stored it: established, under its own names.
	raw := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"customresourcedefinitions.apiextensions.k8s.io","uid":"u1","resourceVersion":"1000000"},` +
		`"spec":{"group":"apiextensions.k8s.io","scope":"Cluster","names":{"plural":"customresourcedefinitions","kind":"CustomResourceDefinition"},"versions":[{"name":"v9","served":true,"storage":true}]},` +
		`"status":{"acceptedNames":{"plural":"customresourcedefinitions","kind":"CustomResourceDefinition"},"conditions":[{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"True"}]}}`
	key := "/registry/apiextensions.k8s.io/customresourcedefinitions/customresourcedefinitions.apiextensions.k8s.io"
	if _, err := e.store.Create(t.Context(), key, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	res, _ := e.srv.reg.lookup(groupCRD, "v1", "customresourcedefinitions")
	if err := e.srv.applyCRD([]byte(raw)); err == nil {
		t.Fatal("a stored shadowing CRD was served")
	}
	if got, _ := e.srv.reg.lookup(groupCRD, "v1", "customresourcedefinitions"); got != res {
		t.Fatal("the CRDs resource was replaced")
	}
	e.expectStatus(404, "NotFound", "", "GET", "/apis/apiextensions.k8s.io/v9/customresourcedefinitions", nil)
	e.deleteCRD("customresourcedefinitions.apiextensions.k8s.io", nil)
	e.must(200, "GET", crdPath+"/widgets.example.com", nil)
}

// TestCRDAPIApproval: a CRD in a *.k8s.io or *.kubernetes.io group needs
// the api-approved.kubernetes.io annotation: a URL, or a reason starting
// with "unapproved". kube's 422, field path and message.
func TestCRDAPIApproval(t *testing.T) {
	e := newEnv(t)
	for _, group := range []string{"foo.k8s.io", "k8s.io", "x.kubernetes.io"} {
		c := crdDoc(group, "foos", "foo", "Foo", "")
		delete(c["metadata"].(map[string]any), "annotations")
		st := e.expectStatus(422, "Invalid", `CustomResourceDefinition.apiextensions.k8s.io "foos.`+group+`" is invalid: `+
			`metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111`,
			"POST", crdPath, c)
		if f := path(st, "details", "causes").([]any)[0].(map[string]any)["field"]; f != "metadata.annotations[api-approved.kubernetes.io]" {
			t.Fatalf("field: %v", f)
		}
		c["metadata"].(map[string]any)["annotations"] = map[string]any{apiApprovedAnnotation: "not approved"}
		e.expectStatus(422, "Invalid", `CustomResourceDefinition.apiextensions.k8s.io "foos.`+group+`" is invalid: `+
			`metadata.annotations[api-approved.kubernetes.io]: Invalid value: "not approved": protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111`,
			"POST", crdPath, c)
		c["metadata"].(map[string]any)["annotations"] = map[string]any{apiApprovedAnnotation: "unapproved, testing only"}
		e.must(201, "POST", crdPath, c)
		// An update that keeps the approval state passes; one that breaks it does not.
		cur := e.must(200, "GET", crdPath+"/foos."+group, nil)
		cur["metadata"].(map[string]any)["annotations"] = map[string]any{apiApprovedAnnotation: ""}
		e.expectStatus(422, "Invalid", "", "PUT", crdPath+"/foos."+group, cur)
	}
	e.must(201, "POST", crdPath, crdDoc("example.com", "foos", "foo", "Foo", ""))
	e.must(201, "POST", crdPath, crdDoc("k8s.io.example.com", "foos", "foo", "Foo", ""))
}

// TestCRDDeleteRemovesObjects: deleting a CRD by name, whether or not it
// still serves a version, deletes its custom resources first, so a CRD
// created again under the same name starts empty. A deletecollection of
// CRDs is kube's generic store's: each CRD without finalizers is deleted
// at once, without the cleanup finalizer, its custom resources left in
// storage, where the CRD created again finds them.
func TestCRDDeleteRemovesObjects(t *testing.T) {
	e := newEnv(t)
	base := "/apis/example.com/v1/namespaces/default/widgets"
	left := func() int {
		res, err := e.store.List(t.Context(), "/registry/example.com/widgets/", storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Items)
	}
	setup := func() {
		e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
		e.must(201, "POST", base, widget("w1", "v1"))
		e.must(201, "POST", base, widget("w2", "v1"))
	}
	recreated := func(how string) {
		t.Helper()
		if n := left(); n != 0 {
			t.Fatalf("%s: %d custom resources left in storage", how, n)
		}
		e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
		if l := e.must(200, "GET", base, nil); len(l["items"].([]any)) != 0 {
			t.Fatalf("%s: re-created CRD resurrected %v", how, l["items"])
		}
		e.deleteCRD("widgets.example.com", nil)
	}

	setup()
	l := e.must(200, "DELETE", crdPath+"?fieldSelector=metadata.name%3Dwidgets.example.com", nil)
	items := l["items"].([]any)
	if len(items) != 1 || path(items[0].(map[string]any), "metadata", "deletionTimestamp") != nil {
		t.Fatalf("deletecollection: %v", l)
	}
	e.expectStatus(404, "NotFound", "", "GET", crdPath+"/widgets.example.com", nil)
	e.expectNoRoute("GET", base)
	if n := left(); n != 2 {
		t.Fatalf("deletecollection: %d custom resources left in storage, want the 2 kube leaves", n)
	}
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	e.must(200, "GET", base+"/w1", nil)
	e.deleteCRD("widgets.example.com", nil)
	recreated("delete after a deletecollection")

	// A CRD that no longer serves any version still owns its objects.
	setup()
	crd := e.must(200, "GET", crdPath+"/widgets.example.com", nil)
	crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["served"] = false
	e.must(200, "PUT", crdPath+"/widgets.example.com", crd)
	e.deleteCRD("widgets.example.com", nil)
	recreated("delete of an unserved CRD")
}

// TestCRDScopeImmutable: kube's 422 for a change of an established CRD's
// scope (and of its group, plural and kind).
func TestCRDScopeImmutable(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	crd := e.must(200, "GET", crdPath+"/widgets.example.com", nil)
	crd["spec"].(map[string]any)["scope"] = "Cluster"
	e.expectStatus(422, "Invalid",
		`CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: spec.scope: Invalid value: "Cluster": field is immutable`,
		"PUT", crdPath+"/widgets.example.com", crd)
	e.expectStatus(422, "Invalid",
		`CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: spec.scope: Invalid value: "Cluster": field is immutable`,
		"PATCH", crdPath+"/widgets.example.com", `{"spec":{"scope":"Cluster"}}`, "Content-Type", "application/merge-patch+json")
	crd["spec"].(map[string]any)["scope"] = "Namespaced"
	crd["spec"].(map[string]any)["names"].(map[string]any)["kind"] = "Gadget"
	st := e.expectStatus(422, "Invalid", "", "PUT", crdPath+"/widgets.example.com", crd)
	if !strings.Contains(st["message"].(string), `spec.names.kind: Invalid value: "Gadget": field is immutable`) {
		t.Fatalf("kind change: %v", st["message"])
	}
}

// FuzzCRDAdmission: any CRD document goes through validation, the naming
// decision and serving without a panic, and whatever it serves never
// replaces a built-in.
func FuzzCRDAdmission(f *testing.F) {
	for _, c := range []map[string]any{
		widgetCRD("Namespaced", "v1", "v1beta1"),
		crdDoc(groupCRD, "customresourcedefinitions", "", "CustomResourceDefinition", ""),
		crdDoc("coordination.k8s.io", "leases", "lease", "Lease", "", "ls"),
		crdDoc("example.com", "pods", "pod", "Pod", "PodList", "po"),
	} {
		b, err := json.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"x.y"},"spec":{"group":"","names":{"plural":"namespaces","kind":"Namespace"},"versions":[{"name":"v1","served":true,"storage":true,"selectableFields":[{"jsonPath":".a"}]}]},"status":{"acceptedNames":{"kind":"Namespace"},"conditions":[{"type":"Established","status":"True"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDoc(b)
		if err != nil {
			return
		}
		reg := newRegistry(sharedReaders{})
		builtins := map[gvr]*resource{}
		for k, r := range reg.byGVR {
			builtins[k] = r
		}
		// The names decided as kube's controllers decide them.
		if crd, err := crdDefinition(d); err == nil {
			namingStatus(crd, reg.usedNames(crd.Spec.Group, crd.Name))
			establishingStatus(crd)
			d.setField("status", crd.Status)
		}
		// As stored (names decided here) and as sent (any status).
		for _, value := range [][]byte{d.encode(), b} {
			n, rev, rs, err := crdResources(value)
			if err != nil {
				continue
			}
			_ = reg.setCRD(n, rev, rs)
			for k, r := range builtins {
				if got, ok := reg.lookup(k.group, k.version, k.resource); !ok || got != r {
					t.Fatalf("built-in %v replaced by CRD %q", k, n)
				}
			}
			_ = reg.setCRD(n, rev, nil)
		}
	})
}
