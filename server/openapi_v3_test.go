package server

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
)

// answerWriter records whether a handler answered: handler3 writes
// nothing for a group-version it does not have, where kube-apiserver
// answers an empty 404.
type answerWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *answerWriter) WriteHeader(code int) { w.wrote = true; w.ResponseWriter.WriteHeader(code) }
func (w *answerWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// TestOpenAPIV3AsHandler3: serve's /openapi/v3 answers every request as
// kube-openapi's handler3 (what kube-apiserver serves v3 with) answers it
// for the same documents: the index, each encoding negotiated from
// Accept, the hash URLs, conditional and range requests, unknown
// group-versions.
func TestOpenAPIV3AsHandler3(t *testing.T) {
	e := newEnv(t)
	ref := handler3.NewOpenAPIService()
	ours := &openAPIDocs{v3Docs: map[string]*v3Doc{}}
	for _, gv := range []string{"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"} {
		s, err := e.srv.openapi.builtinV3[gv].spec()
		if err != nil {
			t.Fatal(err)
		}
		ref.UpdateGroupVersion(gv, s)
		ours.v3Docs[gv] = newV3Doc(func() (*spec3.OpenAPI, error) { return s, nil })
	}
	serveRef := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi/v3" {
			ref.HandleDiscovery(w, r)
			return
		}
		aw := &answerWriter{ResponseWriter: w}
		ref.HandleGroupVersion(aw, r)
		if !aw.wrote {
			w.WriteHeader(http.StatusNotFound)
		}
	}
	serveOurs := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi/v3" {
			ours.serveV3Index(w, r)
			return
		}
		ours.serveV3Document(w, r)
	}
	do := func(h http.HandlerFunc, method, url string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h(w, r)
		return w
	}
	etag := do(serveRef, "GET", "/openapi/v3/api/v1", "Accept", "application/json").Header().Get("Etag")
	indexTag := do(serveRef, "GET", "/openapi/v3").Header().Get("Etag")
	hash := etag[1 : len(etag)-1]
	const pbOld, pbNew = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	cases := []struct {
		method, url string
		hdr         []string
	}{
		{"GET", "/openapi/v3", nil},
		{"GET", "/openapi/v3", []string{"If-None-Match", indexTag}},
		{"HEAD", "/openapi/v3", nil},
		{"GET", "/openapi/v3/api/v1", nil},
		{"GET", "/openapi/v3/api/v1", []string{"Accept", "application/json"}},
		{"GET", "/openapi/v3/apis/apps/v1", []string{"Accept", pbOld}},
		{"GET", "/openapi/v3/apis/apps/v1", []string{"Accept", pbNew}},
		{"GET", "/openapi/v3/apis/apps/v1", []string{"Accept", "application/json;q=0.5, " + pbNew}},
		{"GET", "/openapi/v3/apis/apps/v1", []string{"Accept", "application/*"}},
		{"GET", "/openapi/v3/apis/apps/v1", []string{"Accept", "*/*"}},
		{"GET", "/openapi/v3/apis/apps/v1", []string{"Accept", "text/html"}},
		{"GET", "/openapi/v3/apis/apps/v1", []string{"Accept", "text/html, application/yaml;q=0.2"}},
		{"GET", "/openapi/v3/apis/apps/v1", []string{"Accept", ";;"}},
		{"GET", "/openapi/v3/api/v1?hash=" + hash, []string{"Accept", "application/json"}},
		{"GET", "/openapi/v3/api/v1?hash=" + hash, []string{"Accept", pbNew}},
		{"GET", "/openapi/v3/api/v1?hash=0000", nil},
		{"GET", "/openapi/v3/apis/apps/v1?hash=" + hash, nil},
		{"GET", "/openapi/v3/api/v1", []string{"If-None-Match", etag}},
		{"GET", "/openapi/v3/api/v1", []string{"If-None-Match", `"0000"`}},
		{"GET", "/openapi/v3/api/v1", []string{"Range", "bytes=10-99"}},
		{"HEAD", "/openapi/v3/apis/coordination.k8s.io/v1", nil},
		{"GET", "/openapi/v3/apis/none.example.com/v1", []string{"Accept", "application/json"}},
		{"GET", "/openapi/v3/apis/none.example.com/v1", []string{"Accept", "text/html"}},
		{"GET", "/openapi/v3/apis/none.example.com/v1", nil},
	}
	// Last-Modified, Expires and Date are times; the rest must match.
	headers := []string{"Content-Type", "Etag", "Vary", "Cache-Control", "Location", "Content-Range", "Content-Length", "Accept-Ranges"}
	for _, c := range cases {
		name := fmt.Sprint(c.method, " ", c.url, " ", c.hdr)
		want, got := do(serveRef, c.method, c.url, c.hdr...), do(serveOurs, c.method, c.url, c.hdr...)
		if got.Code != want.Code {
			t.Errorf("%s: %d, handler3 %d", name, got.Code, want.Code)
		}
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Errorf("%s: %d bytes of body, handler3 %d, or not the same", name, got.Body.Len(), want.Body.Len())
		}
		for _, h := range headers {
			if g, w := got.Header().Values(h), want.Header().Values(h); !slices.Equal(g, w) {
				t.Errorf("%s: %s %q, handler3 %q", name, h, g, w)
			}
		}
		if (got.Header().Get("Expires") == "") != (want.Header().Get("Expires") == "") || (got.Header().Get("Last-Modified") == "") != (want.Header().Get("Last-Modified") == "") {
			t.Errorf("%s: Expires %q, Last-Modified %q; handler3 %q, %q", name, got.Header().Get("Expires"), got.Header().Get("Last-Modified"),
				want.Header().Get("Expires"), want.Header().Get("Last-Modified"))
		}
	}
}

// TestSharedValue: the value is made on the first acquire, shared while
// held, and dropped with the last release.
func TestSharedValue(t *testing.T) {
	made := 0
	s := sharedValue[*int]{make: func() *int { made++; v := made; return &v }}
	a := s.acquire()
	if b := s.acquire(); a != b || made != 1 {
		t.Fatalf("two holders: made %d, same %v", made, a == b)
	}
	s.release()
	if s.held == 0 {
		t.Fatal("dropped while still held")
	}
	s.release()
	if s.held != 0 || s.value != nil {
		t.Fatal("kept after the last release")
	}
	if c := s.acquire(); *c != 2 {
		t.Fatalf("made again: %d, want 2", *c)
	}
}
