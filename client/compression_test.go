package client

import (
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestCompressionAsked: what a Client sends as Accept-Encoding, and what
// its caller reads, for each Compression, to a server on 127.0.0.1 that
// gzips what it is asked to: the default asks a loopback server for
// nothing, and its body comes as sent.
func TestCompressionAsked(t *testing.T) {
	big := strings.Repeat("listwatch ", 50_000)
	var mu sync.Mutex
	var asked []string
	srv := startTLS(t, gzipIfAsked(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		_, _ = io.WriteString(w, big)
	})))
	for _, c := range []struct {
		compression Compression
		ask         string
	}{{CompressionAuto, ""}, {CompressionGzip, "gzip"}, {CompressionNone, ""}} {
		asked = nil
		cl := newTestClient(t, srv, func(cfg *Config) { cfg.Compression = c.compression })
		resp, err := cl.Do(ctxT(t), http.MethodGet, "/", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		mu.Lock()
		got := asked
		mu.Unlock()
		if err != nil || string(body) != big || len(got) != 1 || got[0] != c.ask || resp.Uncompressed != (c.ask == "gzip") {
			t.Fatalf("%v: asked %q, read %d bytes (%v), Uncompressed %v", c.compression, got, len(body), err, resp.Uncompressed)
		}
	}
}

// gzipIfAsked gzips h's answers for requests that accept gzip.
func gzipIfAsked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		defer zw.Close()
		h.ServeHTTP(gzipResponse{ResponseWriter: w, w: zw}, r)
	})
}

type gzipResponse struct {
	http.ResponseWriter
	w io.Writer
}

func (g gzipResponse) Write(b []byte) (int, error) { return g.w.Write(b) }

// TestCompressionAuto: CompressionAuto asks for gzip from every server
// but one on a loopback address or named localhost.
func TestCompressionAuto(t *testing.T) {
	for host, want := range map[string]bool{
		"https://127.0.0.1:6443": false, "https://127.1.2.3": false, "https://[::1]:6443": false,
		"https://localhost:6443": false, "https://LOCALHOST": false, "https://api.localhost": false,
		"https://10.0.0.1:6443": true, "https://[2001:db8::1]": true, "https://kube.example.com": true,
		"https://localhost.example.com": true, "https://127.0.0.1.nip.io": true,
	} {
		u, err := url.Parse(host)
		if err != nil {
			t.Fatal(err)
		}
		if got := CompressionAuto.asks(u); got != want {
			t.Errorf("%s: asks %v, want %v", host, got, want)
		}
		if !CompressionGzip.asks(u) || CompressionNone.asks(u) {
			t.Errorf("%s: CompressionGzip or CompressionNone ignored", host)
		}
	}
	if _, err := New(&Config{Host: "https://127.0.0.1", Compression: 7}); !errors.Is(err, ErrConfig) {
		t.Fatalf("unknown Compression: %v", err)
	}
}
