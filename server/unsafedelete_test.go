package server

import (
	"context"
	"testing"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
)

const unsafeOpts = `{"ignoreStoreReadErrorWithClusterBreakingPotential":true}`

// TestUnsafeDelete: ignoreStoreReadErrorWithClusterBreakingPotential
// deletes only what storage cannot read, as kube-apiserver v1.37 answers
// it: a readable object is a 409 (and stays), a missing one a 404, a
// namespace or an RBAC object (whose kube REST has no unsafe deleter) a
// 500 whatever its name, a deletecollection a 422, and the user needs the
// unsafe verb as well.
func TestUnsafeDelete(t *testing.T) {
	noUnsafe := auth.AuthorizerFunc(func(_ context.Context, _ *request.User, info *request.Info) (auth.Decision, string, error) {
		if info.Verb == unsafeDeleteVerb {
			return auth.DecisionNoOpinion, "", nil
		}
		return auth.DecisionAllow, "", nil
	})
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("cm", nil, nil))
	const noDeleter = "Internal error occurred: no unsafe deleter provided, can not honor ignoreStoreReadErrorWithClusterBreakingPotential"
	for _, p := range []string{"/api/v1/namespaces/default", "/api/v1/namespaces/nope",
		"/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/nope", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin"} {
		e.expectStatus(500, "InternalError", noDeleter, "DELETE", p, unsafeOpts)
	}
	e.expectStatus(409, "Conflict", `Operation cannot be fulfilled on configmaps "cm": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/cm, ResourceVersion: 0, AdditionalErrorMsg: unsafe deletion is not allowed because the object is decodable from storage`,
		"DELETE", cmPath+"/cm", unsafeOpts)
	e.must(200, "GET", cmPath+"/cm", nil)
	e.expectStatus(404, "NotFound", `configmaps "nope" not found`, "DELETE", cmPath+"/nope?ignoreStoreReadErrorWithClusterBreakingPotential=true", nil)
	// The name is read when the key is built: after the checks above.
	e.expectStatus(400, "BadRequest", `Name parameter invalid: "a%b": may not contain '%'`, "DELETE", cmPath+"/a%25b", unsafeOpts)
	e.expectStatus(500, "InternalError", noDeleter, "DELETE", "/api/v1/namespaces/a%25b", unsafeOpts)
	e.expectStatus(422, "Invalid", `DeleteOptions.meta.k8s.io "" is invalid: ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: is not allowed with DELETECOLLECTION, try again after removing the option`,
		"DELETE", cmPath, unsafeOpts)
	e.must(200, "GET", cmPath+"/cm", nil)

	e.srv.authz = noUnsafe
	e.expectStatus(403, "Forbidden", `configmaps "cm" is forbidden: not permitted to do "unsafe-delete-ignore-read-errors", reason: `,
		"DELETE", cmPath+"/cm", unsafeOpts)
	e.must(200, "DELETE", cmPath+"/cm", nil) // delete alone is allowed
}

// TestUnsafeDeleteOfUnconvertible: a custom resource the conversion
// webhook cannot convert to the version asked for is what kube's storage
// cannot read there; an unsafe delete at that version deletes it (a dry
// run does not), answering a Status that names it and its kind, while at
// the stored version, where it reads, the object is refused.
func TestUnsafeDeleteOfUnconvertible(t *testing.T) {
	h := newGizmoHook(t)
	e := newEnv(t)
	e.must(201, "POST", crdPath, gizmoCRD(h))
	v1 := "/apis/example.com/v1/namespaces/default/gizmos"
	v2 := "/apis/example.com/v2/namespaces/default/gizmos"
	e.must(201, "POST", v1, gizmo("a", "v1", "red"))
	h.failing.Store(true)
	e.must(500, "DELETE", v1+"/a", nil)
	e.expectStatus(409, "Conflict", "", "DELETE", v2+"/a", unsafeOpts)
	deleted := func(body string) {
		t.Helper()
		st := e.must(200, "DELETE", v1+"/a", body)
		if st["kind"] != "Status" || st["status"] != "Success" || st["code"] != float64(200) ||
			jsonOf(t, st["details"]) != `{"kind":"Gizmo","name":"a"}` {
			t.Fatalf("unsafe delete: %v", st)
		}
	}
	deleted(`{"ignoreStoreReadErrorWithClusterBreakingPotential":true,"dryRun":["All"]}`)
	e.must(200, "GET", v2+"/a", nil)
	deleted(unsafeOpts)
	e.must(404, "GET", v2+"/a", nil)
}
