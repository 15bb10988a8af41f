package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/listwatch/listwatch/server/apiserver"
)

// bigConfigMaps creates n ConfigMaps of about 60 KiB each in default.
func bigConfigMaps(t *testing.T, c *http.Client, s *testServer, n int) {
	t.Helper()
	data := strings.Repeat("listwatch ", 6<<10)
	for i := range n {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big%d"},"data":{"v":%q}}`, i, data)
		if code, st := doStatus(t, c, "POST", s.URL()+"/api/v1/namespaces/default/configmaps", s.Credentials().AdminToken, []byte(body)); code != 201 {
			t.Fatalf("create big%d: %d %s", i, code, st.Message)
		}
	}
}

// rawGet GETs url as the admin with the given headers and returns the
// response with its body read, not decompressed.
func rawGet(t *testing.T, s *testServer, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	c := httpsClient(t, s)
	c.Transport.(*http.Transport).DisableCompression = true
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Credentials().AdminToken)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return resp, b
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// uncompressed records whether client-go's transport decompressed each
// response (Go's transport does it transparently for gzip).
type uncompressed struct {
	mu  sync.Mutex
	yes int
	rt  http.RoundTripper
}

func (u *uncompressed) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := u.rt.RoundTrip(r)
	if err == nil && resp.Uncompressed {
		u.mu.Lock()
		u.yes++
		u.mu.Unlock()
	}
	return resp, err
}

// TestResponseCompression: a LIST over 128 KiB is gzipped for a client
// that accepts gzip, in JSON and protobuf, and decodes to the body sent
// uncompressed; smaller responses, clients without the header and watches
// are not compressed; client-go and kubectl read the gzipped LIST.
func TestResponseCompression(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	bigConfigMaps(t, httpsClient(t, s), s, 3)
	list := s.URL() + "/api/v1/namespaces/default/configmaps"
	gz := map[string]string{"Accept-Encoding": "gzip"}

	for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		t.Run(accept, func(t *testing.T) {
			// The two GETs may straddle a write elsewhere (the server's
			// identity Lease is renewed every 10 s), which moves the
			// list's resourceVersion: then they are sent again.
			var plainResp, resp *http.Response
			var plain, b []byte
			for try := 0; ; try++ {
				plainResp, plain = rawGet(t, s, list, map[string]string{"Accept": accept})
				if ce := plainResp.Header.Get("Content-Encoding"); ce != "" || len(plain) <= 128<<10 {
					t.Fatalf("without Accept-Encoding: Content-Encoding %q, %d bytes", ce, len(plain))
				}
				resp, b = rawGet(t, s, list, map[string]string{"Accept": accept, "Accept-Encoding": "gzip"})
				if ce, v := resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"); ce != "gzip" || v != "Accept-Encoding" {
					t.Fatalf("Content-Encoding %q Vary %q, want gzip and Accept-Encoding", ce, v)
				}
				if ct := resp.Header.Get("Content-Type"); ct != plainResp.Header.Get("Content-Type") {
					t.Errorf("Content-Type %q, uncompressed %q", ct, plainResp.Header.Get("Content-Type"))
				}
				got := gunzip(t, b)
				if bytes.Equal(got, plain) {
					break
				}
				if try == 2 {
					t.Fatalf("gunzipped %d bytes differ from the %d uncompressed", len(got), len(plain))
				}
			}
			t.Logf("%s LIST: %d bytes, gzipped %d", accept, len(plain), len(b))
		})
	}
	t.Run("under threshold", func(t *testing.T) {
		resp, b := rawGet(t, s, list+"?limit=1", gz)
		if ce := resp.Header.Get("Content-Encoding"); ce != "" || len(b) > 128<<10 {
			t.Fatalf("Content-Encoding %q on %d bytes", ce, len(b))
		}
	})
	t.Run("watch", func(t *testing.T) {
		c := httpsClient(t, s)
		c.Transport.(*http.Transport).DisableCompression = true
		req, _ := http.NewRequest("GET", list+"?watch=1&resourceVersion=0", nil)
		req.Header.Set("Authorization", "Bearer "+s.Credentials().AdminToken)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ce := resp.Header.Get("Content-Encoding"); resp.StatusCode != 200 || ce != "" {
			t.Fatalf("watch: %d, Content-Encoding %q", resp.StatusCode, ce)
		}
		// The initial events (about 180 KiB) arrive uncompressed.
		buf := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, buf); err != nil || buf[0] != '{' {
			t.Fatalf("first byte %q, %v", buf, err)
		}
	})
	t.Run("client-go", func(t *testing.T) {
		cfg := restConfig(t, s)
		u := &uncompressed{}
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { u.rt = rt; return u }
		cs := kubernetes.NewForConfigOrDie(cfg)
		l, err := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, cm := range l.Items {
			if strings.HasPrefix(cm.Name, "big") && len(cm.Data["v"]) == 60<<10 {
				n++
			}
		}
		if n != 3 || u.yes != 1 {
			t.Fatalf("client-go: %d big ConfigMaps, %d gzipped responses; want 3 and 1", n, u.yes)
		}
	})
	t.Run("kubectl", func(t *testing.T) {
		out := kubectl(t, s, "", "get", "configmaps", "-o", "name", "-v=8")
		// Go's transport (under client-go) decompresses and drops
		// Content-Encoding; Vary is the mark of a gzipped response.
		if !strings.Contains(out, "Vary: Accept-Encoding") {
			t.Errorf("kubectl -v=8 shows no gzipped response:\n%s", lastLines(out, 20))
		}
		for i := range 3 {
			if !strings.Contains(out, fmt.Sprintf("configmap/big%d\n", i)) {
				t.Fatalf("kubectl get configmaps lacks big%d:\n%s", i, lastLines(out, 20))
			}
		}
	})
}

func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// TestResponseCompressionOffAndProfiling: --disable-response-compression
// sends every response as is; --profiling serves pprof to the admin and to
// whom the ABAC policy grants the path, 403 to other users and 401 to the
// anonymous; without --profiling the path is 404.
func TestResponseCompressionOffAndProfiling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	policy := filepath.Join(dir, "policy.jsonl")
	os.WriteFile(tokens, []byte("bob-token,bob,1001\ncarol-token,carol,1002\n"), 0o600)
	os.WriteFile(policy, []byte(`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"carol","nonResourcePath":"/debug/pprof/*","readonly":true}}`+"\n"), 0o600)
	s := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.DisableResponseCompression = true
		o.Profiling = true
		o.TokenAuthFile = tokens
		o.AuthorizationPolicyFile = policy
	})
	c := httpsClient(t, s)
	bigConfigMaps(t, c, s, 3)

	resp, b := rawGet(t, s, s.URL()+"/api/v1/namespaces/default/configmaps", map[string]string{"Accept-Encoding": "gzip"})
	if ce := resp.Header.Get("Content-Encoding"); ce != "" || len(b) <= 128<<10 {
		t.Fatalf("compression disabled: Content-Encoding %q on %d bytes", ce, len(b))
	}

	pprof := s.URL() + "/debug/pprof/"
	for _, tc := range []struct {
		name, token string
		code        int
	}{
		{"admin", s.Credentials().AdminToken, 200},
		{"granted by policy", "carol-token", 200},
		{"user without policy", "bob-token", 403},
		{"anonymous", "", 401},
	} {
		t.Run("profiling "+tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", pprof, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.code == 200 && !bytes.Contains(body, []byte("goroutine")) {
				t.Fatalf("not the profile index: %.200s", body)
			}
		})
	}
	t.Run("profiling sub-path", func(t *testing.T) {
		if code, _ := doStatus(t, c, "GET", pprof+"goroutine?debug=1", s.Credentials().AdminToken, nil); code != 200 {
			t.Fatalf("goroutine profile: %d", code)
		}
		if code, _ := doStatus(t, c, "GET", pprof+"goroutine?debug=1", "bob-token", nil); code != 403 {
			t.Fatalf("goroutine profile as bob: %d", code)
		}
	})

	t.Run("profiling off", func(t *testing.T) {
		off := startServer(t, "")
		if code, _ := doStatus(t, httpsClient(t, off), "GET", off.URL()+"/debug/pprof/", off.Credentials().AdminToken, nil); code != 404 {
			t.Fatalf("without --profiling: %d, want 404", code)
		}
	})
}
