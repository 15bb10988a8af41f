package server

import (
	"bytes"
	"net/http"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"
)

// YAML responses. kube-apiserver serves application/yaml for every
// response but a watch (objects, lists, Tables, Status errors) by
// encoding JSON and converting it (sigs.k8s.io/yaml's JSONToYAML, keys
// sorted). serve does the same at the edge: a request that negotiated
// YAML has its JSON response buffered and converted once the handler is
// done, so every handler keeps writing JSON (its stored bytes, spliced).

// yamlWriter buffers a JSON response to send it as YAML.
type yamlWriter struct {
	http.ResponseWriter
	code int
	buf  bytes.Buffer
	// bypassed: an error went to the writer below (bypass).
	bypassed bool
}

func (y *yamlWriter) WriteHeader(code int) {
	if y.code == 0 {
		y.code = code
	}
}

func (y *yamlWriter) Write(p []byte) (int, error) {
	if y.code == 0 {
		y.code = http.StatusOK
	}
	return y.buf.Write(p)
}

// Flush does nothing: the body goes out whole, as YAML, at finish.
func (y *yamlWriter) Flush() {}

// bypass drops what was buffered and returns the writer below, for an
// error answered in its own media type; finish then sends nothing.
func (y *yamlWriter) bypass() http.ResponseWriter {
	y.code = 0
	y.buf.Reset()
	y.bypassed = true
	return y.ResponseWriter
}

// finish sends the buffered response: as YAML when it is JSON, else (a
// handler that wrote another type) as it is.
func (y *yamlWriter) finish() {
	if y.code == 0 || y.bypassed {
		return
	}
	body := y.buf.Bytes()
	h := y.ResponseWriter.Header()
	if ct, _, _ := strings.Cut(h.Get("Content-Type"), ";"); ct == mediaJSON {
		b, err := sigsyaml.JSONToYAML(body)
		if err != nil {
			st := asStatus(err)
			h.Set("Content-Type", mediaJSON)
			y.ResponseWriter.WriteHeader(int(st.Code))
			_, _ = y.ResponseWriter.Write(mustStatusJSON(st))
			return
		}
		body = b
		h.Set("Content-Type", contentYAML)
	}
	h.Del("Content-Length")
	y.ResponseWriter.WriteHeader(y.code)
	_, _ = y.ResponseWriter.Write(body)
}
