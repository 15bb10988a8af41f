package filters

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/listwatch/listwatch/server/auth"
)

// Filter wraps a handler.
type Filter func(http.Handler) http.Handler

// Chain wraps h in filters; the first filter is the outermost, the one that
// sees the request first.
func Chain(h http.Handler, filters ...Filter) http.Handler {
	for i := len(filters) - 1; i >= 0; i-- {
		h = filters[i](h)
	}
	return h
}

// Recovery is WithPanicRecovery as a Filter.
func Recovery(logger *slog.Logger) Filter {
	return func(h http.Handler) http.Handler { return WithPanicRecovery(h, logger) }
}

// Metrics is WithMetrics as a Filter.
func Metrics(m *RequestMetrics, known KnownResource) Filter {
	return func(h http.Handler) http.Handler { return WithMetrics(h, m, known) }
}

// Authentication is WithAuthentication as a Filter.
func Authentication(a auth.Authenticator, m *RequestMetrics) Filter {
	return func(h http.Handler) http.Handler { return WithAuthentication(h, a, m) }
}

// Authorization is WithAuthorization as a Filter.
func Authorization(a auth.Authorizer) Filter {
	return func(h http.Handler) http.Handler { return WithAuthorization(h, a) }
}

// MaxInFlight is WithMaxInFlight as a Filter.
func MaxInFlight(l InFlightLimits) Filter {
	return func(h http.Handler) http.Handler { return WithMaxInFlight(h, l) }
}

// BodyLimit is WithBodyLimit as a Filter.
func BodyLimit(limit int64) Filter {
	return func(h http.Handler) http.Handler { return WithBodyLimit(h, limit) }
}

// Timeout is WithTimeout as a Filter.
func Timeout(d time.Duration) Filter {
	return func(h http.Handler) http.Handler { return WithTimeout(h, d) }
}

// BodyDeadline is WithBodyDeadline as a Filter.
func BodyDeadline(d time.Duration) Filter {
	return func(h http.Handler) http.Handler { return WithBodyDeadline(h, d) }
}
