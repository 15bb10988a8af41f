package request

import (
	"net/http"

	"github.com/listwatch/listwatch/wire"
)

// WithRequestInfo is the filter that parses every request once (see Parse)
// and puts the Info in its context, for authorization and routing after it
// to read with InfoFrom. A path Parse refuses gets a 500 Status, as
// kube-apiserver answers it.
func WithRequestInfo(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := Parse(r)
		if err != nil {
			writeStatus(w, r, wire.NewInternalError(err))
			return
		}
		h.ServeHTTP(w, r.WithContext(WithInfo(r.Context(), info)))
	})
}
