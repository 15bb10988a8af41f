package filters

import (
	"io"
	"net/http"
	"slices"
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

// TestStatusPretty: the filters' refusals are indented as kube indents
// them (no final newline) for curl, Wget, browsers and pretty=true, and
// compact with a final newline otherwise (kube-apiserver v1.37.2's 401s,
// compared by hand).
func TestStatusPretty(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t)
	for _, r := range []struct {
		ua, query string
		pretty    bool
	}{
		{"", "", false},
		{"curl/8.5.0", "", true},
		{"Wget/1.21", "", true},
		{"Mozilla/5.0 (X11)", "", true},
		{"kubectl/v1.32", "?pretty=true", true},
		{"curl/8.5.0", "?pretty=false", false},
	} {
		req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/api"+r.query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", r.ua)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%q %s: %d %v", r.ua, r.query, resp.StatusCode, err)
		}
		want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n"
		if r.pretty {
			want = "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"Unauthorized\",\n  \"reason\": \"Unauthorized\",\n  \"code\": 401\n}"
		}
		if string(b) != want {
			t.Errorf("%q %s:\n%s\nwant\n%s", r.ua, r.query, b, want)
		}
	}
}

// TestImpersonation: a request asking to act as someone else (kubectl
// --as) runs as that user when the sender may impersonate (the admin, in
// system:masters), and is refused with kube's Status when not (bob) or
// when it names groups without a user. e2e's
// TestKubeImpersonationSideBySide compares it all with kube-apiserver.
func TestImpersonation(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t)
	req := func(token string, h [][2]string) *http.Response {
		r, err := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/namespaces/default/pods", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer "+token)
		for _, kv := range h {
			r.Header.Add(kv[0], kv[1])
		}
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	got := decodeEcho(t, req(e.creds.AdminToken, [][2]string{{"Impersonate-User", "carol"}, {"Impersonate-Group", "system:masters"}}))
	if got.User != "carol" || !slices.Equal(got.Groups, []string{"system:masters", "system:authenticated"}) {
		t.Errorf("admin as carol: %+v", got)
	}
	// carol's own rights, not the admin's.
	wantStatus(t, req(e.creds.AdminToken, [][2]string{{"Impersonate-User", "carol"}}), http.StatusForbidden, wire.ReasonForbidden,
		`pods is forbidden: User "carol" cannot list resource "pods" in API group "" in the namespace "default"`)
	// bob may impersonate no one: kube names the narrowest check that
	// failed, constrained impersonation's.
	s := wantStatus(t, req(bobToken, [][2]string{{"Impersonate-User", "admin"}}), http.StatusForbidden, wire.ReasonForbidden,
		`pods is forbidden: User "bob" cannot impersonate-on:user-info:list resource "pods" in API group "" in the namespace "default"`)
	if s.Details == nil || s.Details.Kind != "pods" {
		t.Errorf("details %+v", s.Details)
	}
	wantStatus(t, req(e.creds.AdminToken, [][2]string{{"impersonate-group", "dev"}}), http.StatusBadRequest, wire.ReasonBadRequest,
		`requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"dev"}, Extra:map[string][]string(nil)} without impersonating a user name`)
	if got := decodeEcho(t, req(e.creds.AdminToken, nil)); got.User != "admin" {
		t.Errorf("without impersonation: %+v", got)
	}
}
