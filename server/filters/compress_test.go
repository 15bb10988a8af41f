package filters

import (
	"bufio"
	"bytes"
	stdgzip "compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// chunks writes n bytes in writes of 1000, as the LIST handlers stream.
func chunks(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghij{}[]\":,"[i*7%17]
	}
	return b
}

func serveCompressed(t *testing.T, body []byte, code int, header http.Header, path string) *http.Response {
	t.Helper()
	srv := httptest.NewServer(Compression()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		for b := body; len(b) > 0; {
			n := min(1000, len(b))
			if _, err := w.Write(b[:n]); err != nil {
				t.Error(err)
				return
			}
			b = b[n:]
		}
	})))
	t.Cleanup(srv.Close)
	req, err := http.NewRequest("GET", srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	// No transparent decompression: the test sees the bytes sent.
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestCompression(t *testing.T) {
	gz := http.Header{"Accept-Encoding": {"deflate, gzip"}}
	cases := []struct {
		name    string
		size    int
		code    int
		header  http.Header
		path    string
		gzipped bool
	}{
		{"over threshold", CompressionThreshold + 1, 200, gz, "/", true},
		{"error status over threshold", 3 * CompressionThreshold, 500, gz, "/", true},
		{"at threshold", CompressionThreshold, 200, gz, "/", false},
		{"small", 10, 201, gz, "/", false},
		{"empty", 0, 200, gz, "/", false},
		{"no Accept-Encoding", 2 * CompressionThreshold, 200, http.Header{}, "/", false},
		{"other encodings only", 2 * CompressionThreshold, 200, http.Header{"Accept-Encoding": {"br, deflate"}}, "/", false},
		{"gzip with q", 2 * CompressionThreshold, 200, http.Header{"Accept-Encoding": {"gzip;q=1"}}, "/", false},
		{"watch", 2 * CompressionThreshold, 200, gz, "/api/v1/pods?watch=true", false},
		{"no content", 0, 204, gz, "/", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := chunks(tc.size)
			resp := serveCompressed(t, want, tc.code, tc.header, tc.path)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.code)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			var body io.Reader = resp.Body
			if tc.gzipped {
				if ce, v := resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"); ce != "gzip" || v != "Accept-Encoding" {
					t.Fatalf("Content-Encoding %q Vary %q, want gzip and Accept-Encoding", ce, v)
				}
				zr, err := stdgzip.NewReader(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				body = zr
			} else if ce, v := resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"); ce != "" || v != "" {
				t.Fatalf("Content-Encoding %q Vary %q on an uncompressed response", ce, v)
			}
			got, err := io.ReadAll(body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.code == http.StatusNoContent {
				want = nil
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("body: %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

// sentWriter records when the status reached the client's writer.
type sentWriter struct {
	http.ResponseWriter
	sent bool
}

func (w *sentWriter) WriteHeader(code int) { w.sent = true; w.ResponseWriter.WriteHeader(code) }

// TestCompressionHoldsAtMostThreshold: the filter decides as soon as the
// body exceeds the threshold, so it never holds more than that.
func TestCompressionHoldsAtMostThreshold(t *testing.T) {
	sw := &sentWriter{ResponseWriter: httptest.NewRecorder()}
	r := httptest.NewRequest("GET", "/api/v1/configmaps", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	Compression()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(chunks(CompressionThreshold))
		if sw.sent {
			t.Error("decided at the threshold")
		}
		cw := w.(*compressWriter)
		if len(cw.buf) != CompressionThreshold {
			t.Errorf("holds %d bytes", len(cw.buf))
		}
		w.Write([]byte("x"))
		if !sw.sent {
			t.Error("still holding past the threshold")
		}
		if len(cw.buf) != 0 || cw.gz == nil {
			t.Errorf("after the threshold: holds %d bytes, gzip %v", len(cw.buf), cw.gz != nil)
		}
	})).ServeHTTP(sw, r)
}

// TestCompressionPanicDropsHeldResponse: a response still held when the
// handler panics is not sent, so Recovery can answer 500.
func TestCompressionPanicDropsHeldResponse(t *testing.T) {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/v1/configmaps", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.Write([]byte("partial"))
		panic("boom")
	}), Recovery(slog.New(slog.NewTextHandler(io.Discard, nil))), Compression()).ServeHTTP(rec, r)
	if rec.Code != http.StatusInternalServerError || bytes.Contains(rec.Body.Bytes(), []byte("partial")) {
		t.Fatalf("got %d %q, want a 500 Status", rec.Code, rec.Body.String())
	}
}

// flushRecorder records, at each Flush, how many bytes had been sent.
type flushRecorder struct {
	*httptest.ResponseRecorder
	atFlush []int
}

func (w *flushRecorder) Flush() { w.atFlush = append(w.atFlush, w.Body.Len()) }

// TestCompressionFlushSendsAll: after the decision, a handler's Flush puts
// everything written so far on the connection as gzip the client can
// already read, although compressed output is otherwise sent in
// gzipOutputBuffer pieces; and requests that reuse the pooled buffers get
// their own bodies.
func TestCompressionFlushSendsAll(t *testing.T) {
	for i := range 3 {
		body := chunks(2*CompressionThreshold + 1000*i)
		body[0] = byte('0' + i)
		rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
		r := httptest.NewRequest("GET", "/api/v1/configmaps", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		Compression()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(body[:len(body)-1])
			w.(http.Flusher).Flush()
			w.Write(body[len(body)-1:])
		})).ServeHTTP(rec, r)
		if len(rec.atFlush) != 1 {
			t.Fatalf("%d flushes reached the connection, want 1", len(rec.atFlush))
		}
		zr, err := stdgzip.NewReader(bytes.NewReader(rec.Body.Bytes()[:rec.atFlush[0]]))
		if err != nil {
			t.Fatal(err)
		}
		early := make([]byte, len(body)-1)
		if _, err := io.ReadFull(zr, early); err != nil || !bytes.Equal(early, body[:len(body)-1]) {
			t.Fatalf("at the flush the client can read %v, want the %d bytes written", err, len(early))
		}
		zr, err = stdgzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("whole body: %d bytes, %v; want %d", len(got), err, len(body))
		}
	}
}

// discardWriter is a ResponseWriter that counts the bytes sent.
type discardWriter struct {
	h http.Header
	n int64
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// configMapList is a JSON ConfigMapList of n ConfigMaps of about 1 KiB:
// distinct names, uids and resource versions, labels, and a config file of
// text lines with random hex values (real ConfigMaps hold text config).
func configMapList(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.WriteString(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"123456"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		var cfg strings.Builder
		for j := range 12 {
			fmt.Fprintf(&cfg, "setting.%s.%d = %016x\n", []string{"cache", "http", "retry", "db"}[j%4], j, rng.Uint64())
		}
		fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-%05d-config","namespace":"team-%d","uid":"%08x-%04x-%04x-%04x-%012x","resourceVersion":"%d","creationTimestamp":"2026-0%d-1%dT0%d:%02d:%02dZ","labels":{"app":"app-%05d","tier":"backend"}},"data":{"app.properties":%q}}`,
			i, i%20, rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff,
			100000+i*3, 1+i%9, i%10, i%10, i%60, (i*7)%60, i, cfg.String())
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// xList is BenchmarkListConfigMaps' list (server package): n ConfigMaps
// whose data is 900 x's, the best case for gzip.
func xList(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"123456"},"items":[`)
	payload := strings.Repeat("x", 900)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d","namespace":"default","uid":"u","creationTimestamp":"2026-01-01T00:00:00Z"},"data":{"k":%q}}`, i, payload)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// BenchmarkCompressionList10k serves a 10,000-ConfigMap LIST body through
// Compression, streamed in 32 KiB writes as the LIST handler does, to a
// client that accepts gzip and to one that does not: the filter's CPU
// cost and the bytes sent, for text config data and for the best case.
func BenchmarkCompressionList10k(b *testing.B) {
	for _, body := range []struct {
		name string
		b    []byte
	}{{"text", configMapList(10000)}, {"x900", xList(10000)}} {
		h := Compression()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
			for p := body.b; len(p) > 0; {
				n := min(32<<10, len(p))
				w.Write(p[:n])
				p = p[n:]
			}
		}))
		for _, enc := range []string{"", "gzip"} {
			b.Run(body.name+"/encoding="+enc, func(b *testing.B) {
				r := httptest.NewRequest("GET", "/api/v1/configmaps", nil)
				if enc != "" {
					r.Header.Set("Accept-Encoding", enc)
				}
				b.SetBytes(int64(len(body.b)))
				b.ReportAllocs()
				var sent int64
				for b.Loop() {
					w := &discardWriter{h: http.Header{}}
					h.ServeHTTP(w, r)
					sent = w.n
				}
				b.ReportMetric(float64(sent), "sent-bytes")
			})
		}
	}
}

// FuzzCompression: whatever the Accept-Encoding and however the handler
// splits its body, the client gets the body back, gzipped only when it
// accepted gzip and the body exceeds the threshold.
func FuzzCompression(f *testing.F) {
	f.Add("gzip", uint16(0), uint16(1000))
	f.Add("deflate, gzip", uint16(CompressionThreshold/8+1), uint16(32<<10))
	f.Add(" gzip ,br", uint16(CompressionThreshold/8), uint16(1))
	f.Add("gzip;q=0", uint16(40000), uint16(7))
	f.Fuzz(func(t *testing.T, ae string, size8, chunk uint16) {
		body := chunks(int(size8) * 8)
		step := max(1, int(chunk))
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/api/v1/configmaps", nil)
		r.Header.Set("Accept-Encoding", ae)
		Compression()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for p := body; len(p) > 0; {
				n := min(step, len(p))
				w.Write(p[:n])
				p = p[n:]
			}
		})).ServeHTTP(rec, r)
		got := rec.Body.Bytes()
		gzipped := rec.Header().Get("Content-Encoding") == "gzip"
		if gzipped != (AcceptsGzip(r) && len(body) > CompressionThreshold) {
			t.Fatalf("gzipped %v for %d bytes, Accept-Encoding %q", gzipped, len(body), ae)
		}
		if gzipped {
			zr, err := stdgzip.NewReader(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			if got, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("body: %d bytes, want %d", len(got), len(body))
		}
	})
}

// BenchmarkGzipLevel1 compares, in one run, the standard library's gzip
// (what kube-apiserver uses) with the one the filter and watch-list
// streams use, at kube's level 1 on the same LIST bodies: CPU per byte
// and bytes sent.
func BenchmarkGzipLevel1(b *testing.B) {
	for _, body := range []struct {
		name string
		b    []byte
	}{{"text", configMapList(10000)}, {"x900", xList(10000)}} {
		for _, impl := range []struct {
			name string
			new  func(io.Writer) io.WriteCloser
		}{
			{"stdlib", func(w io.Writer) io.WriteCloser { gw, _ := stdgzip.NewWriterLevel(w, 1); return gw }},
			{"served", func(w io.Writer) io.WriteCloser { gw, _ := gzip.NewWriterLevel(w, gzipLevel); return gw }},
		} {
			b.Run(body.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(body.b)))
				var out bytes.Buffer
				for b.Loop() {
					out.Reset()
					gw := impl.new(&out)
					gw.Write(body.b)
					gw.Close()
				}
				b.ReportMetric(float64(out.Len()), "sent-bytes")
			})
		}
	}
}

// BenchmarkCompressionItems writes a 10,000-ConfigMap list item by item,
// as the LIST handler does, each item its own allocation: through a 32 KiB
// buffer in front of Compression, and straight to it (what the handler
// does when the writer reports BuffersWrites). The difference is the cost
// of the extra copy.
func BenchmarkCompressionItems(b *testing.B) {
	for _, data := range []struct {
		name string
		body []byte
	}{{"text", configMapList(10000)}, {"x900", xList(10000)}} {
		b.Run(data.name, func(b *testing.B) { benchmarkCompressionItems(b, data.body) })
	}
}

func benchmarkCompressionItems(b *testing.B, body []byte) {
	start := bytes.Index(body, []byte(`[`)) + 1
	var items [][]byte
	for p := body[start : len(body)-3]; len(p) > 0; {
		i := bytes.Index(p, []byte(`},{"apiVersion"`))
		if i < 0 {
			items = append(items, bytes.Clone(p))
			break
		}
		items = append(items, bytes.Clone(p[:i+1]))
		p = p[i+2:]
	}
	for _, mode := range []string{"buffered", "direct"} {
		h := Compression()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			var out io.Writer = w
			var bw *bufio.Writer
			if mode == "buffered" {
				bw = bufio.NewWriterSize(w, 32<<10)
				out = bw
			} else if !w.(interface{ BuffersWrites() bool }).BuffersWrites() {
				b.Fatal("compressWriter does not buffer writes before its decision")
			}
			out.Write(body[:start])
			for i, it := range items {
				if i > 0 {
					out.Write([]byte{','})
				}
				out.Write(it)
			}
			out.Write([]byte("]}\n"))
			if bw != nil {
				bw.Flush()
			}
		}))
		b.Run(mode, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/api/v1/configmaps", nil)
			r.Header.Set("Accept-Encoding", "gzip")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(&discardWriter{h: http.Header{}}, r)
			}
		})
	}
}

// TestGzipSelf: a handler behind Compression, with Recovery's recorder
// between them as in the server, may send a body it gzipped itself; only
// before its response starts, and only for a client that accepts gzip.
func TestGzipSelf(t *testing.T) {
	for _, tc := range []struct {
		name       string
		accept     string
		writeFirst bool
		wantGzip   bool
	}{
		{"accepts gzip", "gzip", false, true},
		{"no gzip", "identity", false, false},
		{"response started", "gzip", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Recovery(slog.New(slog.DiscardHandler))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				if tc.writeFirst {
					w.Write([]byte("plain "))
				}
				g, ok := w.(GzipSelf)
				if ok && g.WouldGzip() {
					if !g.SendGzipped(http.StatusOK) {
						t.Error("WouldGzip but SendGzipped refused")
					}
					if g.WouldGzip() || g.SendGzipped(http.StatusOK) {
						t.Error("a second SendGzipped was allowed")
					}
					if b, ok := w.(interface{ BuffersWrites() bool }); !ok || b.BuffersWrites() {
						t.Error("a self-gzipped response claims to buffer writes")
					}
					zw := stdgzip.NewWriter(w)
					zw.Write([]byte("hello"))
					zw.Close()
					return
				}
				w.Write([]byte("hello"))
			}))
			srv := httptest.NewServer(Compression()(h))
			t.Cleanup(srv.Close)
			req, _ := http.NewRequest("GET", srv.URL, nil)
			req.Header.Set("Accept-Encoding", tc.accept)
			tr := &http.Transport{DisableCompression: true}
			t.Cleanup(tr.CloseIdleConnections)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.wantGzip || resp.StatusCode != 200 {
				t.Fatalf("status %d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
			}
			want := "hello"
			if tc.writeFirst {
				want = "plain hello"
			}
			if tc.wantGzip {
				zr, err := stdgzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				if v := resp.Header.Get("Vary"); v != "Accept-Encoding" {
					t.Errorf("Vary %q", v)
				}
			}
			if string(body) != want {
				t.Fatalf("body %q, want %q", body, want)
			}
		})
	}
}
