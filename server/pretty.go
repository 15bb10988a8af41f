package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/listwatch/listwatch/server/request"
)

// Pretty JSON. kube-apiserver indents a JSON answer (two spaces, no
// newline at the end) when the query has pretty=true, or, without a
// pretty parameter, when the client is curl, Wget or a browser; a watch
// stays compact. serve does the same at the edge: such a response is
// buffered once its handler has said it is JSON, and indented whole.

// prettyJSON indents the JSON answers of requests kube would indent.
func prettyJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !request.IsPrettyPrint(r) || isWatchRequest(r) {
			next.ServeHTTP(w, r)
			return
		}
		pw := &prettyWriter{ResponseWriter: w}
		defer pw.finish()
		next.ServeHTTP(pw, r)
	})
}

// prettyWriter buffers a JSON answer to indent it; any other answer (a
// pod's log, say) passes as it is written.
type prettyWriter struct {
	http.ResponseWriter
	code int // 0 until the header is written
	json bool
	buf  bytes.Buffer
}

func (p *prettyWriter) WriteHeader(code int) {
	if p.code != 0 {
		return
	}
	p.code = code
	ct, _, _ := strings.Cut(p.Header().Get("Content-Type"), ";")
	if p.json = strings.TrimSpace(ct) == mediaJSON; !p.json {
		p.ResponseWriter.WriteHeader(code)
	}
}

func (p *prettyWriter) Write(b []byte) (int, error) {
	if p.code == 0 {
		p.WriteHeader(http.StatusOK)
	}
	if p.json {
		return p.buf.Write(b)
	}
	return p.ResponseWriter.Write(b)
}

// Flush passes on what is not buffered.
func (p *prettyWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && !p.json {
		f.Flush()
	}
}

func (p *prettyWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// finish sends a buffered answer, indented (as it is if it is not JSON
// after all).
func (p *prettyWriter) finish() {
	if !p.json {
		return
	}
	body := bytes.TrimRight(p.buf.Bytes(), "\n")
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err == nil {
		body = out.Bytes()
	}
	p.Header().Del("Content-Length")
	p.ResponseWriter.WriteHeader(p.code)
	_, _ = p.ResponseWriter.Write(body)
}

// isWatchRequest reports whether r is a watch (its request info's verb).
func isWatchRequest(r *http.Request) bool {
	info, ok := request.InfoFrom(r.Context())
	if !ok {
		var err error
		if info, err = request.Parse(r); err != nil {
			return false
		}
	}
	return info.Verb == "watch"
}
