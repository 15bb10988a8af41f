package filters

import "net/http"

// Filter wraps a handler. Every filter of this package is built by a
// function returning a Filter (Recovery, Authentication, Timeout, …), the
// same shape as request.WithRequestInfo, so a chain reads as a list.
type Filter func(http.Handler) http.Handler

// Chain wraps h in filters; the first filter is the outermost, the one that
// sees the request first.
func Chain(h http.Handler, filters ...Filter) http.Handler {
	for i := len(filters) - 1; i >= 0; i-- {
		h = filters[i](h)
	}
	return h
}
