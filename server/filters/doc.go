// Package filters is the HTTP middleware that stands between the TLS
// listener and the API. Each filter has one constructor, in its own file,
// that takes the filter's settings and returns a Filter, a
// func(http.Handler) http.Handler (Recovery(logger), Timeout(d), …);
// Chain composes them. A Filter may wrap any number of handlers; each
// wrap has its own state (MaxInFlight's semaphores). Every refusal is a Kubernetes Status document with
// the right code, written as JSON (Impersonation's, by kube's own filter, as
// the client's Accept asks).
//
// # Order
//
// The integrator builds the chain outermost first:
//
//	h := filters.Chain(api,
//		filters.Recovery(logger),              // 500 on panic, or a cut connection once the response began
//		request.WithRequestInfo,               // puts *request.Info in the context
//		filters.BodyDeadline(60*time.Second),  // read deadline for bodies, even unread ones
//		filters.TimeoutParameter,              // 400 for a timeout parameter that does not parse
//		filters.Authentication(authn, m),      // 401; anonymous only for public info
//		filters.Impersonation(authz),          // kubectl --as: 403 unless allowed, then the impersonated user
//		filters.Metrics(m, api.Serves),        // counts authenticated requests, 403s and 429s included
//		request.WithScope(api),                // 404: no cluster-scoped resource under a namespace
//		filters.Authorization(authz),          // 403, kube's message
//		filters.MaxInFlight(limits),           // 429 + Retry-After; needs the user (per-user limit, masters)
//		filters.Timeout(60*time.Second),       // 504; skips watches
//		filters.BodyLimit(0),                  // 413 over 3 MiB (0: wire.MaxRequestBodyBytes); reads bodies within the timeout
//	)
//
// Compression is not part of the chain: the integrator wraps the API
// handler alone in it (kube gzips API responses, not /metrics or pprof), so
// it runs inside every filter above and a 504 replaces what it holds.
//
// Filters read the request's *request.Info (request.InfoFrom) for verb,
// resource and whether the request is long-running (IsLongRunning); without
// one they fall back to the URL (?watch=1 is a watch). Metrics, MaxInFlight
// and Timeout must therefore sit inside the filter that sets the Info.
//
// # Guarantees
//
//   - Watches stream: every wrapping ResponseWriter here flushes through and
//     unwraps (http.ResponseController works), and Timeout leaves
//     long-running requests alone.
//   - After Timeout answers 504 the handler's writes are discarded; if the
//     handler had already started its response the connection is aborted
//     instead (http.ErrAbortHandler), as kube-apiserver does, so a client
//     never takes a truncated body for a whole one.
//   - BodyLimit never holds more than limit+1 bytes of a body of unknown
//     length, and refuses a declared length over the limit after reading
//     (and discarding) limit+1 bytes of it, as kube-apiserver reads.
//   - A body is read within the request timeout: BodyLimit runs inside
//     Timeout, so a client that dribbles its body gets 504 and gives back
//     its in-flight slot at the timeout, and BodyDeadline's read deadline
//     (the timeout plus a second) then ends the read itself.
//   - Compression holds at most CompressionThreshold (128 KiB) of a
//     response before it decides, and leaves watches alone.
//   - Metric label values come from fixed sets and the resources the server
//     serves; a request without valid credentials only counts in
//     authentication_attempts. A client cannot grow the metrics.
//
// # Caveats
//
// As in kube-apiserver, members of system:masters are not refused by the
// in-flight limits (they may exceed them), and long-running requests are
// not counted against the read-only and mutating limits. Watches have their
// own limits instead, in all and per user, which system:masters may also
// exceed: no user can lock the admin out.
package filters
