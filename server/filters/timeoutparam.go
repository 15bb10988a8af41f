package filters

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/listwatch/listwatch/server/request"
)

// TimeoutParameter refuses a request that is not long-running
// (IsLongRunning) whose timeout parameter does not parse as a Go duration,
// with kube's 400 in the media type the client accepts, as kube's
// WithRequestDeadline does: right after the request info, before
// authentication, so an anonymous client's timeout=abc is that 400, not
// a 401. It only refuses: every other request goes on to authentication.
// Timeout reads the parameter again for the deadline (and refuses it the
// same way in a chain without this filter).
func TimeoutParameter(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsLongRunning(r) {
			if _, err := timeoutParameter(r); err != nil {
				refuseTimeout(w, r, err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// errBadTimeout: the timeout parameter does not parse.
var errBadTimeout = errors.New("invalid timeout specified in the request URL")

// timeoutParameter is r's timeout parameter, 0 for none; an error wrapping
// errBadTimeout, with kube's message, for one that does not parse.
func timeoutParameter(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("timeout")
	if v == "" {
		return 0, nil
	}
	t, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%w - %v", errBadTimeout, err)
	}
	return t, nil
}

// refuseTimeout writes kube's 400 for a timeout parameter that does not
// parse (err from timeoutParameter), negotiated as kube's
// failedErrorHandler does.
func refuseTimeout(w http.ResponseWriter, r *http.Request, err error) {
	var gv schema.GroupVersion
	if info, ok := request.InfoFrom(r.Context()); ok {
		gv = schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	}
	responsewriters.ErrorNegotiated(apierrors.NewBadRequest(err.Error()), request.StatusCodecs, gv, w, r)
}
