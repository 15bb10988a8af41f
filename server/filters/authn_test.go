package filters

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"slices"
	"testing"

	"github.com/listwatch/listwatch/server/request"
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

// TestUnauthorizedNegotiated: a 401 comes in the media type the client
// accepts, as kube's (e2e.TestKubeTimeoutParameterSameAsOurs compares
// them with kube-apiserver's), and in JSON for one it accepts none of.
func TestUnauthorizedNegotiated(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t)
	for _, tc := range []struct{ accept, ctype, body string }{
		{"application/yaml", "application/yaml", "apiVersion: v1\ncode: 401\nkind: Status\nmessage: Unauthorized\nmetadata: {}\nreason: Unauthorized\nstatus: Failure\n"},
		{"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf", ""}, // decoded below
		{"text/html", "application/json", "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"Unauthorized\",\n  \"reason\": \"Unauthorized\",\n  \"code\": 401\n}"},
	} {
		req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/namespaces/default/pods", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", tc.accept)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if tc.body == "" {
			// kube's protobuf of the Status this test's other cases show.
			obj, _, err := request.StatusCodecs.(serializer.CodecFactory).UniversalDeserializer().Decode(b, nil, nil)
			if st, ok := obj.(*metav1.Status); err != nil || !ok || st.Code != 401 || st.Reason != metav1.StatusReasonUnauthorized || st.Message != "Unauthorized" || st.Status != metav1.StatusFailure {
				t.Errorf("Accept %s: %v %#v", tc.accept, err, obj)
			}
			b = nil
		}
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Content-Type") != tc.ctype || string(b) != tc.body {
			t.Errorf("Accept %s: %d %s %q, want 401 %s %q", tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.ctype, tc.body)
		}
	}
}

// TestUnauthorizedClosesHTTP2: as kube's (UnauthenticatedHTTP2DOSMitigation),
// the connection of an HTTP/2 request that is refused 401 is closed after
// the answer; an authenticated client keeps its connection.
func TestUnauthorizedClosesHTTP2(t *testing.T) {
	closed := make(chan struct{}, 8)
	e := newEnv(t, envConfig{connState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}})
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.srv.TLS.ClientCAs}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	// Authenticated, twice: one connection, kept.
	var conns atomic.Int32
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			conns.Add(1)
		}
	}}
	for range 2 {
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, e.srv.URL+"/version", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.creds.AdminToken)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 2 {
			t.Fatalf("HTTP/%d, want 2", resp.ProtoMajor)
		}
		decodeEcho(t, resp)
		resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("two authenticated requests used %d connections, want 1", n)
	}
	select {
	case <-closed:
		t.Fatal("an authenticated client's connection was closed")
	default:
	}

	// The same client with a bad token: 401, and the server closes the
	// connection (GOAWAY, then the close when the client hangs up).
	tr.CloseIdleConnections()
	<-closed // the first connection, closed by the client
	resp := e.do(t, c, http.MethodGet, "/version", "not-a-token", nil)
	if resp.ProtoMajor != 2 {
		t.Fatalf("HTTP/%d, want 2", resp.ProtoMajor)
	}
	wantStatus(t, resp, http.StatusUnauthorized, wire.ReasonUnauthorized, "Unauthorized")
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the unauthenticated HTTP/2 connection was not closed")
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
