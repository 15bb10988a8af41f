package client

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGzipResponses: the client asks for gzip and hands back the decoded
// body (http.Transport does it); an encoding the caller chose is left
// alone; and a stream of gzip members, one per flush, written as serve
// writes a watch-list stream, is read member by member as each arrives,
// not once the stream ends. (Decoding with github.com/klauspost/compress
// instead was tried: it is about twice as fast on a page of text, but a
// 100,000-ConfigMap informer sync used as much CPU either way.)
func TestGzipResponses(t *testing.T) {
	big := strings.Repeat("listwatch ", 50_000)
	next := make(chan struct{})
	var mu sync.Mutex
	var asked []string
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			_, _ = io.WriteString(w, big)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		// A member as serve and kube-apiserver write one on a watch:
		// its data sync-flushed, then closed, so that no data waits in
		// the final block for the next member.
		member := func(s string) {
			zw := gzip.NewWriter(w)
			_, _ = io.WriteString(zw, s)
			_ = zw.Flush()
			_ = zw.Close()
			w.(http.Flusher).Flush()
		}
		if r.URL.Path != "/stream" {
			member(big)
			return
		}
		member("first\n")
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		member("second\n")
	}))
	ctx := ctxT(t)

	c := newTestClient(t, srv, nil)
	resp, err := c.Do(ctx, http.MethodGet, "/big", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != big || resp.Header.Get("Content-Encoding") != "" || !resp.Uncompressed {
		t.Fatalf("%d bytes, %v, Content-Encoding %q, Uncompressed %v", len(body), err, resp.Header.Get("Content-Encoding"), resp.Uncompressed)
	}

	identity := newTestClient(t, srv, func(cfg *Config) {
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				r = r.Clone(r.Context())
				r.Header.Set("Accept-Encoding", "identity")
				return rt.RoundTrip(r)
			})
		}
	})
	resp, err = identity.Do(ctx, http.MethodGet, "/big", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != big || resp.Uncompressed {
		t.Fatalf("identity: %d bytes, %v, Uncompressed %v", len(body), err, resp.Uncompressed)
	}
	mu.Lock()
	if len(asked) != 2 || asked[0] != "gzip" || asked[1] != "identity" {
		t.Fatalf("Accept-Encoding sent: %q", asked)
	}
	mu.Unlock()

	resp, err = c.Do(ctx, http.MethodGet, "/stream", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	got := make(chan string, 1)
	go func() {
		l, _ := lines.ReadString('\n')
		got <- l
	}()
	select {
	case l := <-got:
		if l != "first\n" {
			t.Fatalf("first member: %q", l)
		}
	case <-time.After(10 * time.Second): // bounds a failure only
		close(next)
		t.Fatal("the first member was not read before the second was sent")
	}
	close(next)
	rest, err := io.ReadAll(lines)
	if err != nil || !bytes.Equal(rest, []byte("second\n")) {
		t.Fatalf("second member: %q %v", rest, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
