package server

import (
	"testing"
)

// TestWriteResourceVersionsAsKube: what a write's metadata.resourceVersion
// and metadata.generation do, as kube-apiserver's store does with them
// (TestKubeWritesSameAsOurs compares with kube-apiserver itself).
func TestWriteResourceVersionsAsKube(t *testing.T) {
	e := newEnv(t)
	plain500 := func(msg, method, path string, body any, hdr ...string) {
		t.Helper()
		m := e.must(500, method, path, body, hdr...)
		if m["kind"] != "Status" || m["reason"] != nil || m["message"] != msg {
			t.Fatalf("%s %s: %v, want a 500 without a reason saying %q", method, path, m, msg)
		}
	}
	cm := func(name, meta string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"` + meta + `},"data":{"a":"1"}}`
	}

	// A create that names a resourceVersion: kube's storage refuses it
	// with a plain 500, unless a dry run (which stops above that check)
	// or the versioner cannot parse it.
	plain500("resourceVersion should not be set on objects to be created", "POST", cmPath, cm("rv", `,"resourceVersion":"5"`))
	e.expectStatus(404, "NotFound", `configmaps "rv" not found`, "GET", cmPath+"/rv", nil)
	if m := e.must(201, "POST", cmPath+"?dryRun=All", cm("rv", `,"resourceVersion":"5"`)); path(m, "metadata", "resourceVersion") != "5" {
		t.Fatalf("dry-run create: resourceVersion %v, want the one sent (5)", path(m, "metadata", "resourceVersion"))
	}
	if m := e.must(201, "POST", cmPath+"?dryRun=All", cm("rv", `,"resourceVersion":"x1"`)); path(m, "metadata", "resourceVersion") != "x1" {
		t.Fatalf("dry-run create: resourceVersion %v, want the one sent (x1)", path(m, "metadata", "resourceVersion"))
	}
	if m := e.must(201, "POST", cmPath+"?dryRun=All", cm("rv", "")); path(m, "metadata", "resourceVersion") != nil {
		t.Fatalf("dry-run create without a resourceVersion answered %v", path(m, "metadata", "resourceVersion"))
	}
	e.must(201, "POST", cmPath, cm("rvx", `,"resourceVersion":"x1"`))
	// A dry-run create of a name that exists is refused, as a real one.
	e.expectStatus(409, "AlreadyExists", `configmaps "rvx" already exists`, "POST", cmPath+"?dryRun=All", cm("rvx", ""))

	// An update's resourceVersion: what ParseUint refuses is a plain 500,
	// but after the object was found; "0" is none (unconditional); one
	// past any revision is stale.
	plain500(`strconv.ParseUint: parsing "x1": invalid syntax`, "PUT", cmPath+"/rvx", cm("rvx", `,"resourceVersion":"x1"`))
	plain500(`strconv.ParseUint: parsing "-1": invalid syntax`, "PUT", cmPath+"/rvx", cm("rvx", `,"resourceVersion":"-1"`))
	e.expectStatus(404, "NotFound", `configmaps "nope" not found`, "PUT", cmPath+"/nope", cm("nope", `,"resourceVersion":"x1"`))
	e.must(200, "PUT", cmPath+"/rvx", cm("rvx", `,"resourceVersion":"0"`))
	e.expectStatus(409, "Conflict", "", "PUT", cmPath+"/rvx", cm("rvx", `,"resourceVersion":"18446744073709551615"`))

	// Kinds whose strategy refuses unconditional updates (Leases here):
	// kube's 422, naming the resource where the kind goes.
	const leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	e.must(201, "POST", leases, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"}}`)
	m := e.expectStatus(422, "Invalid", `leases.coordination.k8s.io "l" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`,
		"PUT", leases+"/l", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"x"}}`)
	if d := m["details"].(map[string]any); d["kind"] != "leases" || d["group"] != "coordination.k8s.io" {
		t.Fatalf("details: %v", d)
	}

	// An update creates where the strategy allows it (Leases): 201, its
	// resourceVersion parsed and then ignored; a uid precondition against
	// no object is a 409.
	e.must(201, "PUT", leases+"/made", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"made","resourceVersion":"5"}}`)
	plain500(`strconv.ParseUint: parsing "x1": invalid syntax`, "PUT", leases+"/bad", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"bad","resourceVersion":"x1"}}`)
	e.expectStatus(409, "Conflict", "", "PUT", leases+"/uid", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"uid","uid":"abc"}}`)
	e.expectStatus(404, "NotFound", "", "GET", leases+"/bad", nil)
	// A patch's object is read as an update's: a resourceVersion the
	// patch makes unparsable is a 500; one it removes is none.
	plain500(`strconv.ParseUint: parsing "x1": invalid syntax`, "PATCH", cmPath+"/rvx", `{"metadata":{"resourceVersion":"x1"}}`, "Content-Type", "application/merge-patch+json")
	e.must(200, "PATCH", cmPath+"/rvx", `{"metadata":{"resourceVersion":null}}`, "Content-Type", "application/merge-patch+json")
	e.expectStatus(422, "Invalid", "", "PATCH", leases+"/l", `{"metadata":{"resourceVersion":null}}`, "Content-Type", "application/merge-patch+json")
	// An apply that creates ignores a resourceVersion that parses.
	e.must(201, "PATCH", cmPath+"/ap?fieldManager=me", cm("ap", `,"resourceVersion":"5"`), "Content-Type", "application/apply-patch+yaml")
	// An apply to an object is read as a patch's: the configuration's
	// resourceVersion, if any, must be the stored one (kubectl apply
	// --server-side of a manifest taken from a get is a 409 once the
	// object changed); one that does not parse is a 500; "0" is none.
	const applyCT = "application/apply-patch+yaml"
	e.expectStatus(409, "Conflict", `Operation cannot be fulfilled on configmaps "ap": the object has been modified; please apply your changes to the latest version and try again`,
		"PATCH", cmPath+"/ap?fieldManager=me", cm("ap", `,"resourceVersion":"1"`), "Content-Type", applyCT)
	plain500(`strconv.ParseUint: parsing "x1": invalid syntax`, "PATCH", cmPath+"/ap?fieldManager=me", cm("ap", `,"resourceVersion":"x1"`), "Content-Type", applyCT)
	ap := e.must(200, "PATCH", cmPath+"/ap?fieldManager=me", cm("ap", `,"resourceVersion":"0"`), "Content-Type", applyCT)
	e.must(200, "PATCH", cmPath+"/ap?fieldManager=me", cm("ap", `,"resourceVersion":"`+path(ap, "metadata", "resourceVersion").(string)+`"`), "Content-Type", applyCT)
	e.expectStatus(422, "Invalid", "", "PATCH", leases+"/l?fieldManager=me", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","resourceVersion":"0"}}`, "Content-Type", applyCT)

	// A create of a name whose object is being deleted.
	e.must(201, "POST", cmPath, cm("fin", `,"finalizers":["example.com/hold"]`))
	e.must(200, "DELETE", cmPath+"/fin", nil)
	e.expectStatus(409, "AlreadyExists", `object is being deleted: configmaps "fin" already exists`, "POST", cmPath, cm("fin", ""))
	e.expectStatus(409, "AlreadyExists", `object is being deleted: configmaps "fin" already exists`, "POST", cmPath+"?dryRun=All", cm("fin", ""))

	// generation on create: the kind's strategy's to set (Deployments: 1);
	// a kind whose strategy leaves it (ConfigMaps) keeps the client's.
	got := e.must(201, "POST", cmPath, cm("gen", `,"generation":7`))
	if g := path(got, "metadata", "generation"); g != 7.0 {
		t.Fatalf("ConfigMap generation %v, want 7", g)
	}
	got = e.must(201, "POST", "/apis/apps/v1/namespaces/default/deployments", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","generation":7},
		"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`)
	if g := path(got, "metadata", "generation"); g != 1.0 {
		t.Fatalf("Deployment generation %v, want 1", g)
	}
}

// TestApplyResourceVersionOfCustomResource: an apply to a custom resource
// (which refuses unconditional updates) without a resourceVersion applies
// to the stored object, as kube's; one naming a stale resourceVersion is
// a 409, and "0" asks for the unconditional update it refuses.
func TestApplyResourceVersionOfCustomResource(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, gadgetCRD(t, gadgetSchema, nil))
	const applyCT = "application/apply-patch+yaml"
	withRV := func(rv string) string {
		return `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","resourceVersion":"` + rv + `"},"spec":{"name":"abc"}}`
	}
	e.must(201, "PATCH", gadgets+"/g?fieldManager=me", gadget("g", `{"name":"abc"}`), "Content-Type", applyCT)
	got := e.must(200, "PATCH", gadgets+"/g?fieldManager=me", gadget("g", `{"name":"abcd"}`), "Content-Type", applyCT)
	if n := path(got, "spec", "name"); n != "abcd" {
		t.Fatalf("applied spec.name %v, want abcd", n)
	}
	e.expectStatus(409, "Conflict", `Operation cannot be fulfilled on gadgets.example.com "g": the object has been modified; please apply your changes to the latest version and try again`,
		"PATCH", gadgets+"/g?fieldManager=me", withRV("1"), "Content-Type", applyCT)
	e.expectStatus(422, "Invalid", `gadgets.example.com "g" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`,
		"PATCH", gadgets+"/g?fieldManager=me", withRV("0"), "Content-Type", applyCT)
	e.must(200, "PATCH", gadgets+"/g?fieldManager=me", withRV(path(got, "metadata", "resourceVersion").(string)), "Content-Type", applyCT)
}
