package filters

import (
	"net/http"
	"time"
)

// BodyDeadline bounds the reading of a request body: for a request
// that is not long-running and has a body, the connection's read deadline
// is set (http.ResponseController.SetReadDeadline) to d (DefaultRequestTimeout
// if d <= 0) plus a grace from now, so a client that dribbles its body
// cannot hold a connection, a goroutine and whatever the handler holds
// beyond the request timeout: the read fails, and the handler with it.
// net/http clears the deadline before the connection's next request.
//
// It belongs outermost, right inside request info: a body that nothing
// reads (a request refused with 401, 403 or 429) is still drained by
// net/http before it answers, under this deadline. Timeout, further in,
// answers 504 at d and frees the request's in-flight slot; this deadline,
// timeoutGrace later, frees the handler goroutine still reading.
func BodyDeadline(d time.Duration) Filter {
	if d <= 0 {
		d = DefaultRequestTimeout
	}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil && r.Body != http.NoBody && !IsLongRunning(r) {
				// Not every writer supports deadlines (httptest's recorder
				// does not); Timeout still bounds the handler then.
				_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d + timeoutGrace))
			}
			h.ServeHTTP(w, r)
		})
	}
}
