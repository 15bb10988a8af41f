package server

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
)

const applyCT = "application/apply-patch+yaml"

// managers lists a response's managedFields as "manager/operation[/subresource]".
func managers(t *testing.T, m map[string]any) []string {
	t.Helper()
	var out []string
	mfs, _ := path(m, "metadata", "managedFields").([]any)
	for _, mf := range mfs {
		e := mf.(map[string]any)
		s := e["manager"].(string) + "/" + e["operation"].(string)
		if sub, ok := e["subresource"].(string); ok {
			s += "/" + sub
		}
		out = append(out, s)
	}
	sort.Strings(out) // kube orders entries by times the test does not control
	return out
}

func fieldsOf(t *testing.T, m map[string]any, manager string) string {
	t.Helper()
	mfs, _ := path(m, "metadata", "managedFields").([]any)
	for _, mf := range mfs {
		if e := mf.(map[string]any); e["manager"] == manager {
			b, _ := json.Marshal(e["fieldsV1"])
			return string(b)
		}
	}
	return ""
}

// TestManagedFieldsOnWrites: create, update and patches record their
// manager (the fieldManager parameter, else the User-Agent's product) and
// the fields they set; [{}] clears managedFields; a bad fieldManager is
// kube's 422.
func TestManagedFieldsOnWrites(t *testing.T) {
	e := newEnv(t)
	ua := []string{"User-Agent", "kubectl-client-side-apply/v1.32.0 (linux/amd64)"}
	m := e.must(201, "POST", cmPath, cm("a", nil, map[string]string{"k": "1"}), ua...)
	if got := strings.Join(managers(t, m), ","); got != "kubectl-client-side-apply/Update" {
		t.Fatalf("create managers %s", got)
	}
	if f := fieldsOf(t, m, "kubectl-client-side-apply"); f != `{"f:data":{".":{},"f:k":{}}}` {
		t.Fatalf("create fields %s", f)
	}
	m = e.must(200, "PATCH", cmPath+"/a?fieldManager=bob", `{"data":{"j":"2"}}`, "Content-Type", "application/merge-patch+json")
	if got := strings.Join(managers(t, m), ","); got != "bob/Update,kubectl-client-side-apply/Update" || fieldsOf(t, m, "bob") != `{"f:data":{"f:j":{}}}` {
		t.Fatalf("patch managers %s %s", got, fieldsOf(t, m, "bob"))
	}
	m = e.must(200, "PATCH", cmPath+"/a", `{"metadata":{"managedFields":[{}]}}`, "Content-Type", "application/merge-patch+json")
	if mf := path(m, "metadata", "managedFields"); mf != nil {
		t.Fatalf("managedFields not cleared: %v", mf)
	}
	e.expectStatus(422, "Invalid", `CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes`,
		"POST", cmPath+"?fieldManager="+strings.Repeat("x", 129), cm("b", nil, nil))
}

// TestEmptyManagedFields: an empty managedFields resets them on a
// built-in kind, a strategic merge patch's too (whose typed result used
// to lose the empty list on the way to the field manager); a custom
// resource's decoder drops it, as kube's, so there it keeps them.
func TestEmptyManagedFields(t *testing.T) {
	e := newEnv(t)
	for _, ct := range []string{"application/strategic-merge-patch+json", "application/merge-patch+json", "application/json-patch+json"} {
		e.must(201, "POST", cmPath+"?fieldManager=maker", cm("mf", nil, map[string]string{"a": "b"}))
		body := `{"metadata":{"managedFields":[]}}`
		if ct == "application/json-patch+json" {
			body = `[{"op":"replace","path":"/metadata/managedFields","value":[]}]`
		}
		if m := e.must(200, "PATCH", cmPath+"/mf?fieldManager=clearer", body, "Content-Type", ct); path(m, "metadata", "managedFields") != nil {
			t.Errorf("%s: managedFields kept: %v", ct, path(m, "metadata", "managedFields"))
		}
		e.must(200, "DELETE", cmPath+"/mf", "")
	}
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	w := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", w+"?fieldManager=maker", widget("w", "v1"))
	m := e.must(200, "PATCH", w+"/w?fieldManager=clearer", `{"metadata":{"managedFields":[]}}`, "Content-Type", "application/merge-patch+json")
	if got := strings.Join(managers(t, m), ","); got != "maker/Update" {
		t.Errorf("custom resource managers after an empty managedFields: %q", got)
	}
}

// TestServerSideApply: apply creates (201), needs a fieldManager, refuses
// force on other patches, answers a conflict with kube's 409 listing the
// fields and managers, and force takes the fields over.
func TestServerSideApply(t *testing.T) {
	e := newEnv(t)
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: '1'\n"
	m := e.must(201, "PATCH", cmPath+"/a?fieldManager=alice", body, "Content-Type", applyCT)
	if got := strings.Join(managers(t, m), ","); got != "alice/Apply" || path(m, "data", "k") != "1" {
		t.Fatalf("apply create: %v %v", got, m)
	}
	e.must(200, "PATCH", cmPath+"/a?fieldManager=alice", body, "Content-Type", applyCT)
	e.expectStatus(422, "Invalid", `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`,
		"PATCH", cmPath+"/a", body, "Content-Type", applyCT)
	e.expectStatus(422, "Invalid", `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`,
		"PATCH", cmPath+"/a?force=true", `{}`, "Content-Type", "application/merge-patch+json")
	e.expectStatus(400, "BadRequest", "", "PATCH", cmPath+"/a?fieldManager=bob", "a: [\n", "Content-Type", applyCT)
	other := strings.Replace(body, "'1'", "'2'", 1)
	st := e.expectStatus(409, "Conflict", `Apply failed with 1 conflict: conflict with "alice": .data.k`,
		"PATCH", cmPath+"/a?fieldManager=bob", other, "Content-Type", applyCT)
	if c := path(st, "details", "causes"); c == nil {
		t.Fatalf("conflict without causes: %v", st)
	}
	m = e.must(200, "PATCH", cmPath+"/a?fieldManager=bob&force=true", other, "Content-Type", applyCT)
	if got := strings.Join(managers(t, m), ","); got != "bob/Apply" || path(m, "data", "k") != "2" {
		t.Fatalf("forced apply: %v %v", got, m)
	}
	e.expectStatus(400, "BadRequest", "the name of the object (b) does not match the name on the URL (a)",
		"PATCH", cmPath+"/a?fieldManager=bob", strings.Replace(body, "name: a", "name: b", 1), "Content-Type", applyCT)
}

// TestServerSideApplyCustomResource: apply creates and updates a custom
// resource; a strategic merge patch of one is kube's 415.
func TestServerSideApplyCustomResource(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	body := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: blue\n"
	m := e.must(201, "PATCH", widgets+"/w?fieldManager=alice", body, "Content-Type", applyCT)
	if got := strings.Join(managers(t, m), ","); got != "alice/Apply" || fieldsOf(t, m, "alice") != `{"f:spec":{"f:color":{}}}` {
		t.Fatalf("apply create: %v %s", got, fieldsOf(t, m, "alice"))
	}
	e.expectStatus(409, "Conflict", `Apply failed with 1 conflict: conflict with "alice": .spec.color`,
		"PATCH", widgets+"/w?fieldManager=bob", strings.Replace(body, "blue", "green", 1), "Content-Type", applyCT)
	e.expectStatus(415, "UnsupportedMediaType",
		"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
		"PATCH", widgets+"/w", `{}`, "Content-Type", "application/strategic-merge-patch+json")
}

// TestApplyCreateNeedsCreate: an apply that creates the object is
// authorized a second time, as a create (kube's patch handler does the
// same), so that patch permission alone does not create objects.
func TestApplyCreateNeedsCreate(t *testing.T) {
	noCreate := auth.AuthorizerFunc(func(_ context.Context, _ *request.User, info *request.Info) (auth.Decision, string, error) {
		if info.Verb == "create" {
			return auth.DecisionDeny, "no creating", nil
		}
		return auth.DecisionAllow, "", nil
	})
	e := newEnv(t, func(c *Config) { c.Authorizer = noCreate })
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: '1'\n"
	e.expectStatus(403, "Forbidden", `configmaps "a" is forbidden: User "" cannot create resource "configmaps" in API group "" in the namespace "default": no creating`,
		"PATCH", cmPath+"/a?fieldManager=alice", body, "Content-Type", applyCT)
	e.must(404, "GET", cmPath+"/a", nil)
	// Once the object exists (created by whoever may), apply updates it.
	e.srv.authz = nil
	e.must(201, "PATCH", cmPath+"/a?fieldManager=alice", body, "Content-Type", applyCT)
	e.srv.authz = noCreate
	e.must(200, "PATCH", cmPath+"/a?fieldManager=alice", strings.Replace(body, "'1'", "'2'", 1), "Content-Type", applyCT)
}

// TestManagedFieldsOfPodSubresources: a write through pods/ephemeralcontainers
// or pods/resize is recorded with its subresource, as /status and /scale
// writes are; those two subresources' field managers reset no fields (kube's
// RESTs for them expose none), so an apply through ephemeralcontainers owns
// the status it sent, though the strategy drops it.
func TestManagedFieldsOfPodSubresources(t *testing.T) {
	e := newEnv(t)
	pods := "/api/v1/namespaces/default/pods"
	e.must(201, "POST", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pd"},"spec":{"containers":[{"name":"c","image":"x",
		"resources":{"requests":{"cpu":"100m","memory":"10Mi"},"limits":{"cpu":"100m","memory":"10Mi"}}}]}}`)
	const smp = "application/strategic-merge-patch+json"
	e.must(200, "PATCH", pods+"/pd/ephemeralcontainers?fieldManager=dbg", `{"spec":{"ephemeralContainers":[{"name":"e","image":"x"}]}}`, "Content-Type", smp)
	e.must(200, "PATCH", pods+"/pd/resize?fieldManager=rsz", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"200m"}}}]}}`, "Content-Type", smp)
	m := e.must(200, "PATCH", pods+"/pd/ephemeralcontainers?fieldManager=ap",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: pd\nspec:\n  ephemeralContainers:\n  - {name: e, image: x}\nstatus:\n  message: hi\n", "Content-Type", applyCT)
	if got, want := strings.Join(managers(t, m), ","), "Go-http-client/Update,ap/Apply/ephemeralcontainers,dbg/Update/ephemeralcontainers,rsz/Update/resize"; got != want {
		t.Fatalf("managers %s, want %s", got, want)
	}
	if f := fieldsOf(t, m, "ap"); !strings.Contains(f, `"f:status":{"f:message":{}}`) || path(m, "status", "message") != nil {
		t.Fatalf("apply through ephemeralcontainers: fields %s, status %v", f, path(m, "status"))
	}
}
