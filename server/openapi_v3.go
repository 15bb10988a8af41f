package server

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/munnerz/goautoneg"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
)

// /openapi/v3 as kube-openapi's handler3 serves it for kube-apiserver
// (the index of group-versions, each document in JSON or protobuf, ETags
// that hash the JSON, the hash URLs' redirects and immutable caching), but
// keeping of each document only its JSON, compressed, instead of the
// spec objects handler3 keeps alongside it for the life of the process.
// The built-in documents are built at start (kube's MutatingAdmissionPolicy
// plugin reads the index, which hashes every document): with handler3 they
// held 21 MB of spec objects and 13 MB of JSON on every server; compressed,
// the JSON of all of them is about half a megabyte.

// v3Doc is one group-version's document: built on first use from build,
// then kept only as its JSON (and, once asked for, its protobuf), each
// compressed.
type v3Doc struct {
	build func() (*spec3.OpenAPI, error)
	// shared, if set, is the key of a built-in document in builtV3: the
	// document is built once per process, not once per server.
	shared string
	// loaded, if set, is called once the document is loaded, whether
	// built here or taken from builtV3.
	loaded func()

	once     sync.Once
	json     packed
	etag     string
	modified time.Time
	err      error

	pbOnce sync.Once
	pb     packed
	pbErr  error
}

var errBuildUnfinished = errors.New("the document's build did not finish")

func newV3Doc(build func() (*spec3.OpenAPI, error)) *v3Doc { return &v3Doc{build: build} }

// builtV3 holds, by v3Doc.shared, the built-in documents built in this
// process (*v3Built). Every server serves the same built-ins (the same
// Go types, definitions and feature gates), so a process that starts
// several, as tests and embedders do, builds each document once: building
// them all is most of a server start's CPU (the index hashes every one).
// They are about half a megabyte, compressed.
var builtV3 sync.Map

// v3Built is a document as built: immutable once stored.
type v3Built struct {
	json     packed
	etag     string
	modified time.Time
}

// load builds the document once; its error, if any, stays.
func (d *v3Doc) load() error {
	d.once.Do(func() {
		build, loaded := d.build, d.loaded
		d.build, d.loaded = nil, nil
		if loaded != nil {
			defer loaded()
		}
		if d.shared != "" {
			if v, ok := builtV3.Load(d.shared); ok {
				b := v.(*v3Built)
				d.etag, d.modified, d.json = b.etag, b.modified, b.json
				return
			}
		}
		// Stays if build panics: the document is then never served.
		d.err = errBuildUnfinished
		s, err := build()
		if err != nil {
			d.err = err
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			d.err = err
			return
		}
		d.etag, d.modified, d.json, d.err = openAPIETag(b), time.Now(), pack(b), nil
		if d.shared != "" {
			builtV3.LoadOrStore(d.shared, &v3Built{json: d.json, etag: d.etag, modified: d.modified})
		}
	})
	return d.err
}

// jsonBytes returns the document's JSON.
func (d *v3Doc) jsonBytes() ([]byte, error) {
	if err := d.load(); err != nil {
		return nil, err
	}
	return d.json.unpack()
}

// protoBytes returns the document in kube-openapi's protobuf, converted
// from its JSON as handler3 converts it, once.
func (d *v3Doc) protoBytes() ([]byte, error) {
	d.pbOnce.Do(func() {
		j, err := d.jsonBytes()
		if err != nil {
			d.pbErr = err
			return
		}
		b, err := handler3.ToV3ProtoBinary(j)
		if err != nil {
			d.pbErr = err
			return
		}
		d.pb = pack(b)
	})
	if d.pbErr != nil {
		return nil, d.pbErr
	}
	return d.pb.unpack()
}

// spec decodes the document again, for a merge with a CRD's.
func (d *v3Doc) spec() (*spec3.OpenAPI, error) {
	j, err := d.jsonBytes()
	if err != nil {
		return nil, err
	}
	s := &spec3.OpenAPI{}
	if err := json.Unmarshal(j, s); err != nil {
		return nil, err
	}
	return s, nil
}

// packed is bytes kept gzip-compressed: a document is read a handful of
// times in a server's life, and kept for all of it.
type packed struct {
	gz []byte
	n  int
}

func pack(b []byte) packed {
	var buf bytes.Buffer
	// BestSpeed: every server builds every built-in document at start.
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = zw.Write(b) // a bytes.Buffer does not fail
	_ = zw.Close()
	return packed{gz: bytes.Clone(buf.Bytes()), n: len(b)}
}

func (p packed) unpack() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(p.gz))
	if err != nil {
		return nil, err
	}
	out := make([]byte, p.n)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, err
	}
	return out, nil
}

// openAPIETag is handler3's ETag of a document: the SHA-512 of its JSON,
// in upper-case hex.
func openAPIETag(b []byte) string {
	sum := sha512.Sum512(b)
	return fmt.Sprintf("%X", sum)
}

// v3ServerRelativeURL is the index's URL of a group-version's document.
func v3ServerRelativeURL(gv, etag string) string {
	u := url.URL{Path: "/openapi/v3/" + gv, RawQuery: url.Values{"hash": {etag}}.Encode()}
	return u.String()
}

// v3Index is the /openapi/v3 index built for one generation of the
// served set.
type v3Index struct {
	gen      uint64
	body     []byte
	etag     string
	modified time.Time
}

// v3IndexBody is the index for docs, each built.
func v3IndexBody(docs map[string]*v3Doc) ([]byte, error) {
	paths := make(map[string]handler3.OpenAPIV3DiscoveryGroupVersion, len(docs))
	for gv, d := range docs {
		if err := d.load(); err != nil {
			return nil, fmt.Errorf("openapi/v3 %s: %w", gv, err)
		}
		paths[gv] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: v3ServerRelativeURL(gv, d.etag)}
	}
	return json.Marshal(handler3.OpenAPIV3Discovery{Paths: paths})
}

// serveV3Index serves /openapi/v3: the index, rebuilt when the served set
// changed since it was last built.
func (o *openAPIDocs) serveV3Index(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	idx, gen := o.v3Index, o.v3Gen
	docs := o.v3Docs
	o.mu.Unlock()
	if idx == nil || idx.gen != gen {
		body, err := v3IndexBody(docs)
		if err != nil {
			slog.Error("serving the OpenAPI v3 index", "err", err)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if idx != nil && bytes.Equal(idx.body, body) {
			// The same index: as handler3, the same Last-Modified.
			idx = &v3Index{gen: gen, body: idx.body, etag: idx.etag, modified: idx.modified}
		} else {
			idx = &v3Index{gen: gen, body: body, etag: openAPIETag(body), modified: time.Now()}
		}
		o.mu.Lock()
		if o.v3Gen == gen {
			o.v3Index = idx
		}
		o.mu.Unlock()
	}
	w.Header().Set("Etag", strconv.Quote(idx.etag))
	w.Header().Set("Content-Type", "application/json")
	http.ServeContent(w, r, "/openapi/v3", idx.modified, bytes.NewReader(idx.body))
}

// v3Formats are the documents' encodings in handler3's order of
// preference: the media subtype asked for and the Content-Type answered.
var v3Formats = []struct{ subtype, contentType string }{
	{"json", "application/json"},
	{"com.github.proto-openapi.spec.v3.v1.0+protobuf", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"},
	{"com.github.proto-openapi.spec.v3@v1.0+protobuf", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"},
}

// serveV3Document serves /openapi/v3/<gv path>, negotiated from Accept
// as handler3 does; kube-apiserver answers an empty 404 for a
// group-version it does not serve (and for an Accept it cannot parse).
func (o *openAPIDocs) serveV3Document(w http.ResponseWriter, r *http.Request) {
	gv := ""
	if parts := strings.SplitAfterN(r.URL.Path, "/", 4); len(parts) == 4 {
		gv = parts[3]
	}
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	clauses := goautoneg.ParseAccept(accept)
	w.Header().Add("Vary", "Accept")
	if len(clauses) == 0 {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	o.mu.Lock()
	d := o.v3Docs[gv]
	o.mu.Unlock()
	for _, c := range clauses {
		for _, f := range v3Formats {
			if (c.Type != "application" && c.Type != "*") || (c.SubType != f.subtype && c.SubType != "*") {
				continue
			}
			if d == nil {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			var body []byte
			var err error
			if f.subtype == "json" {
				body, err = d.jsonBytes()
			} else {
				body, err = d.protoBytes()
			}
			if err != nil {
				slog.Error("serving an OpenAPI v3 document", "groupVersion", gv, "err", err)
				w.WriteHeader(http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", f.contentType)
			w.Header().Set("Etag", strconv.Quote(d.etag))
			if hash := r.URL.Query().Get("hash"); hash != "" {
				if hash != d.etag {
					http.Redirect(w, r, v3ServerRelativeURL(gv, d.etag), http.StatusMovedPermanently)
					return
				}
				w.Header().Set("Vary", "Accept")
				w.Header().Set("Cache-Control", "public, immutable")
				w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
			}
			http.ServeContent(w, r, "", d.modified, bytes.NewReader(body))
			return
		}
	}
	w.WriteHeader(http.StatusNotAcceptable)
}
