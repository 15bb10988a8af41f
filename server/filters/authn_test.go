package filters

import (
	"net/http"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

func TestAuthenticationToken(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t)

	got := decodeEcho(t, e.do(t, c, http.MethodGet, "/version", e.creds.AdminToken, nil))
	if got.User != "admin" || !contains(got.Groups, "system:masters") || !contains(got.Groups, "system:authenticated") {
		t.Errorf("admin token: %+v", got)
	}
	if got.Authorization != "" {
		t.Errorf("Authorization header reached the API: %q", got.Authorization)
	}

	for _, r := range []struct{ path, token string }{
		{"/api", "not-a-token"},
		{"/api", ""}, // missing
		{"/api/v1/namespaces/default/pods", ""},
		// A bad credential is refused even where anonymous reads are allowed.
		{"/version", "not-a-token"},
	} {
		resp := e.do(t, c, http.MethodGet, r.path, r.token, nil)
		wantStatus(t, resp, http.StatusUnauthorized, wire.ReasonUnauthorized, "Unauthorized")
	}
}

func TestAuthenticationClientCert(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t, e.adminCert(t))
	got := decodeEcho(t, e.do(t, c, http.MethodGet, "/api/v1/namespaces/default/pods", "", nil))
	if got.User != "admin" || !contains(got.Groups, "system:masters") || got.Verb != "list" {
		t.Errorf("client cert: %+v", got)
	}
	// A certificate and a token at once (what our kubeconfig makes kubectl
	// do): the certificate wins, the header is still stripped.
	got = decodeEcho(t, e.do(t, c, http.MethodGet, "/version", bobToken, nil))
	if got.User != "admin" || got.Authorization != "" {
		t.Errorf("cert + token: %+v", got)
	}
}
