package filters

import (
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

func TestAuthorizationNoPolicyOnlyAdmin(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t)
	decodeEcho(t, e.do(t, c, http.MethodDelete, "/api/v1/namespaces/kube-system/secrets/x", e.creds.AdminToken, nil))

	resp := e.do(t, c, http.MethodGet, "/api/v1/namespaces/default/configmaps", bobToken, nil)
	s := wantStatus(t, resp, http.StatusForbidden, wire.ReasonForbidden,
		`configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default"`)
	if s.Details == nil || s.Details.Kind != "configmaps" {
		t.Errorf("details %+v", s.Details)
	}
	resp = e.do(t, c, http.MethodGet, "/openapi/v2", bobToken, nil)
	wantStatus(t, resp, http.StatusForbidden, wire.ReasonForbidden, `forbidden: User "bob" cannot get path "/openapi/v2"`)
	// Public information is for everyone (system:public-info-viewer).
	decodeEcho(t, e.do(t, c, http.MethodGet, "/healthz", bobToken, nil))
	resp = e.do(t, c, http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments/web/scale", bobToken, nil)
	wantStatus(t, resp, http.StatusForbidden, wire.ReasonForbidden,
		`deployments.apps "web" is forbidden: User "bob" cannot get resource "deployments/scale" in API group "apps" in the namespace "ns"`)
	resp = e.do(t, c, http.MethodGet, "/api/v1/nodes", bobToken, nil)
	wantStatus(t, resp, http.StatusForbidden, wire.ReasonForbidden,
		`nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope`)
}

func TestAuthorizationABAC(t *testing.T) {
	policy, err := auth.ParsePolicyFile(strings.NewReader(`
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"bob","namespace":"default","resource":"pods","apiGroup":"","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"dev","nonResourcePath":"/version"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envConfig{policy: policy})
	c := e.client(t)
	decodeEcho(t, e.do(t, c, http.MethodGet, "/api/v1/namespaces/default/pods?watch=1", bobToken, nil))
	decodeEcho(t, e.do(t, c, http.MethodGet, "/version", bobToken, nil))
	decodeEcho(t, e.do(t, c, http.MethodPost, "/api/v1/namespaces/default/configmaps", e.creds.AdminToken, nil))

	resp := e.do(t, c, http.MethodGet, "/api/v1/namespaces/default/configmaps", bobToken, nil)
	wantStatus(t, resp, http.StatusForbidden, wire.ReasonForbidden,
		`configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default": No policy matched.`)
	resp = e.do(t, c, http.MethodPost, "/api/v1/namespaces/default/pods", bobToken, nil)
	wantStatus(t, resp, http.StatusForbidden, wire.ReasonForbidden,
		`pods is forbidden: User "bob" cannot create resource "pods" in API group "" in the namespace "default": No policy matched.`)
	resp = e.do(t, c, http.MethodGet, "/openapi/v2", bobToken, nil)
	wantStatus(t, resp, http.StatusForbidden, wire.ReasonForbidden,
		`forbidden: User "bob" cannot get path "/openapi/v2": No policy matched.`)
}

func TestForbiddenSanitizesHTML(t *testing.T) {
	s := Forbidden(&request.User{Name: "<b>&"}, &request.Info{Verb: "get", Path: "/x"}, "")
	if want := `forbidden: User "&lt;b&gt;&amp;" cannot get path "/x"`; s.Message != want {
		t.Errorf("message %q, want %q", s.Message, want)
	}
}

func TestAuthorizationWithoutInfoIs500(t *testing.T) {
	h := Authorization(auth.NewAuthorizer(nil))(http.NotFoundHandler())
	rec := newRecorder()
	h.ServeHTTP(rec, newRequest(http.MethodGet, "/x"))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", rec.Code)
	}
}
