package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/wire"
)

// httpsClient trusts the server's CA and presents no client certificate.
func httpsClient(t testing.TB, s *testServer) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Credentials().CAPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func doStatus(t testing.TB, c *http.Client, method, url, token string, body []byte) (int, wire.Status) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var st wire.Status
	_ = json.Unmarshal(data, &st)
	return resp.StatusCode, st
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "extra-tokens.csv")
	policy := filepath.Join(dir, "policy.jsonl")
	os.WriteFile(tokens, []byte("bob-token,bob,1001\nreader-token,rita,1002,\"readers\"\n"), 0o600)
	os.WriteFile(policy, []byte(`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"readers","namespace":"*","resource":"configmaps","apiGroup":"*","readonly":true}}`+"\n"), 0o600)
	s := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.TokenAuthFile = tokens
		o.AuthorizationPolicyFile = policy
	})
	c := httpsClient(t, s)
	cms := s.URL() + "/api/v1/namespaces/default/configmaps"

	cases := []struct {
		name, method, token string
		code                int
		reason              wire.StatusReason
	}{
		{"no credentials", "GET", "", 401, wire.ReasonUnauthorized},
		{"bad token", "GET", "nope", 401, wire.ReasonUnauthorized},
		{"user without policy", "GET", "bob-token", 403, wire.ReasonForbidden},
		{"reader writes", "POST", "reader-token", 403, wire.ReasonForbidden},
		{"reader lists", "GET", "reader-token", 200, ""},
		{"admin lists", "GET", s.Credentials().AdminToken, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.method == "POST" {
				body = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
			}
			code, st := doStatus(t, c, tc.method, cms, tc.token, body)
			if code != tc.code || st.Reason != tc.reason {
				t.Fatalf("got %d %q (%s), want %d %q", code, st.Reason, st.Message, tc.code, tc.reason)
			}
		})
	}
	_, st := doStatus(t, c, "GET", cms, "bob-token", nil)
	if want := `User "bob" cannot list resource "configmaps" in API group "" in the namespace "default"`; !strings.Contains(st.Message, want) {
		t.Fatalf("403 message %q lacks %q", st.Message, want)
	}
	// HTTP is refused: the port speaks TLS only.
	resp, err := http.Get(strings.Replace(s.URL(), "https://", "http://", 1) + "/healthz")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatalf("plain HTTP served: %s", body)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := httpsClient(t, s)
	admin := s.Credentials().AdminToken
	big := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":%q}}`, strings.Repeat("a", 4<<20))
	code, st := doStatus(t, c, "POST", s.URL()+"/api/v1/namespaces/default/configmaps", admin, []byte(big))
	if code != 413 || st.Reason != wire.ReasonRequestEntityTooLarge {
		t.Fatalf("4 MiB body: %d %q", code, st.Reason)
	}
}

func TestRestartKeepsObjectsAndRVs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, dir)
	for i := range 5 {
		kubectl(t, s, "", "create", "configmap", fmt.Sprintf("keep-%d", i), fmt.Sprintf("--from-literal=i=%d", i))
	}
	before := kubectl(t, s, "", "get", "configmaps", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}/{.metadata.uid}{"\n"}{end}`)
	s.Stop()

	s2 := startServer(t, dir)
	after := kubectl(t, s2, "", "get", "configmaps", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}/{.metadata.uid}{"\n"}{end}`)
	if before != after || strings.Count(after, "keep-") != 5 {
		t.Fatalf("after restart:\n%s\nbefore:\n%s", after, before)
	}
}
