package filters

import (
	"io"
	"net/http"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

// TestTimeoutParameterBeforeAuthentication: as kube's WithRequestDeadline,
// a timeout parameter that does not parse is refused with kube's 400
// before authentication, anonymous or not, on resource and non-resource
// paths; a watch (long-running) does not read it; and the refusal opens
// nothing: without credentials, a good timeout is still the 401.
func TestTimeoutParameterBeforeAuthentication(t *testing.T) {
	e := newEnv(t, envConfig{})
	anon, admin := e.client(t), e.client(t, e.adminCert(t))
	const bad = `invalid timeout specified in the request URL - time: invalid duration "abc"`
	for _, c := range []*http.Client{anon, admin} {
		for _, p := range []string{"/api/v1/namespaces/default/pods?timeout=abc", "/version?timeout=abc", "/healthz?timeout=1x"} {
			msg := bad
			if p == "/healthz?timeout=1x" {
				msg = `invalid timeout specified in the request URL - time: unknown unit "x" in duration "1x"`
			}
			wantStatus(t, e.do(t, c, http.MethodGet, p, "", nil), http.StatusBadRequest, wire.ReasonBadRequest, msg)
		}
	}
	for _, p := range []string{"/api/v1/namespaces/default/pods?timeout=1s", "/api/v1/namespaces/default/pods?watch=1&timeout=abc"} {
		resp := e.do(t, anon, http.MethodGet, p, "", nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s: %d, want 401", p, resp.StatusCode)
		}
	}
	// In the media type the client accepts, as kube's.
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/namespaces/default/pods?timeout=abc", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/yaml")
	resp, err := anon.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "apiVersion: v1\ncode: 400\nkind: Status\nmessage: 'invalid timeout specified in the request URL - time: invalid duration \"abc\"'\nmetadata: {}\nreason: BadRequest\nstatus: Failure\n"; resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/yaml" || string(b) != want {
		t.Errorf("YAML: %d %s %q, want 400 %q", resp.StatusCode, resp.Header.Get("Content-Type"), b, want)
	}
	if got := decodeEcho(t, e.do(t, admin, http.MethodGet, "/api/v1/namespaces/default/pods?watch=1&timeout=abc", "", nil)); got.HasDeadline {
		t.Error("a watch was given the request deadline")
	}
}
