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

// status is the code written, 200 if the handler wrote nothing.
func (w *recorder) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}
