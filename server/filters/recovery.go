package filters

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
)

// panicMessage is what the client learns of a panic; details go to the log.
const panicMessage = "This request caused apiserver to panic. Look in the logs for details."

// Recovery turns a panic below it into a 500 InternalError Status
// and an error log with the stack. If the response had already begun it
// cannot be turned into a 500, so the connection is aborted instead.
// http.ErrAbortHandler passes through silently: it is how filters below
// (Timeout) deliberately cut a connection.
func Recovery(logger *slog.Logger) Filter {
	if logger == nil {
		logger = slog.Default()
	}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &recorder{ResponseWriter: w}
			defer func() {
				p := recover()
				if p == nil {
					return
				}
				if p == http.ErrAbortHandler {
					panic(p)
				}
				value, stack := p, []byte(nil)
				if hp, ok := p.(*HandlerPanic); ok {
					value, stack = hp.Value, hp.Stack
				} else {
					stack = debug.Stack()
				}
				logger.Error("panic serving request", "method", r.Method, "uri", r.RequestURI,
					"panic", fmt.Sprint(value), "stack", string(stack))
				if rec.wrote {
					panic(http.ErrAbortHandler)
				}
				writeText(rec, http.StatusInternalServerError, panicMessage)
			}()
			h.ServeHTTP(rec, r)
		})
	}
}
