package request

import (
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
)

// WithRequestInfo is the filter that parses every request once (see Parse)
// and puts the Info in its context, for authorization and routing after it
// to read with InfoFrom. A path Parse refuses gets kube-apiserver's answer
// to it: a 500 in plain text naming the request and the fault.
func WithRequestInfo(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := Parse(r)
		if err != nil {
			responsewriters.InternalError(w, r, fmt.Errorf("failed to create RequestInfo: %v", err))
			return
		}
		h.ServeHTTP(w, r.WithContext(WithInfo(r.Context(), info)))
	})
}
