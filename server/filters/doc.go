// Package filters is the HTTP middleware that stands between the TLS
// listener and the API: each filter is a func(http.Handler) http.Handler
// shaped constructor (With…) in its own file, and every refusal is a
// Kubernetes Status document with the right code, written as JSON.
//
// # Order
//
// The integrator builds the chain outermost first:
//
//	h := filters.Chain(api,
//		filters.Recovery(logger),         // 500 on panic; outermost, sees every panic
//		request.WithRequestInfo,          // puts *request.Info in the context
//		filters.Metrics(m),               // counts everything below, 401s and 429s included
//		filters.Authentication(authn),    // 401; no anonymous access
//		request.WithScope(srv),           // 404: no cluster-scoped resource under a namespace
//		filters.Authorization(authz),     // 403, kube's message
//		filters.MaxInFlight(limits),      // 429 + Retry-After; needs the user (masters exemption)
//		filters.BodyLimit(3<<20),         // 413
//		filters.Timeout(60*time.Second),  // 504; skips watches
//	)
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
//     length, and refuses a declared length over the limit without reading.
//
// # Caveats
//
// As in kube-apiserver, members of system:masters are not refused by the
// read-only and mutating in-flight limits (they may exceed them); they are
// still subject to the watch limit, which protects memory.
package filters
