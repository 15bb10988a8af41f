package filters

import "net/http"

// recorder remembers the status a handler wrote. It flushes through and
// unwraps, so watches keep streaming and http.ResponseController reaches
// the connection. Used from the handler's goroutine only.
type recorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *recorder) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *recorder) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WouldGzip and SendGzipped pass GzipSelf through: a recorder inside the
// Compression filter (Recovery's, around every handler) must not hide it.
func (w *recorder) WouldGzip() bool {
	g, ok := w.ResponseWriter.(GzipSelf)
	return ok && !w.wrote && g.WouldGzip()
}

func (w *recorder) SendGzipped(code int) bool {
	g, ok := w.ResponseWriter.(GzipSelf)
	if !ok || w.wrote || !g.SendGzipped(code) {
		return false
	}
	w.code, w.wrote = code, true
	return true
}

// BuffersWrites passes the writer's below through (see compressWriter).
func (w *recorder) BuffersWrites() bool {
	b, ok := w.ResponseWriter.(interface{ BuffersWrites() bool })
	return ok && b.BuffersWrites()
}

// status is the code written, 200 if the handler wrote nothing.
func (w *recorder) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}
