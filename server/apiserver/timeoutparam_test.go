package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// TestTimeoutParameterBeforeAuthentication: as in kube-apiserver's chain,
// a timeout parameter that does not parse is the 400 of kube's
// WithRequestDeadline before authentication runs: an anonymous client
// gets it, not a 401; with a good one (or on a watch, which does not read
// it) the anonymous client is still refused.
func TestTimeoutParameterBeforeAuthentication(t *testing.T) {
	srv := apiservertest.Start(t, "")
	admin, anon := clients(t, srv)
	u := srv.URL()
	const bad = `"message":"invalid timeout specified in the request URL - time: invalid duration \"abc\""`
	for _, c := range []struct {
		client *http.Client
		path   string
		code   int
		body   string
	}{
		{anon, "/api/v1/namespaces?timeout=abc", 400, bad},
		{anon, "/api/v1/namespaces/default/configmaps/x?timeout=abc", 400, bad},
		{anon, "/apis?timeout=abc", 400, bad},
		{admin, "/api/v1/namespaces?timeout=abc", 400, bad},
		{anon, "/api/v1/namespaces?timeout=10s", 401, `"reason":"Unauthorized"`},
		{anon, "/api/v1/namespaces?watch=1&timeout=abc", 401, `"reason":"Unauthorized"`},
	} {
		code, _, body := answer(t, c.client, "GET", u+c.path, "")
		if code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("GET %s: %d %s, want %d %s", c.path, code, body, c.code, c.body)
		}
	}
}
