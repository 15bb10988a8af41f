package filters

import (
	"log/slog"
	"net/http"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// WithAuthentication puts the user authn finds into the request context
// (request.WithUser), in group system:authenticated, and removes the
// Authorization header so no handler can replay the credential. A request
// that no authenticator accepts gets 401 Unauthorized: there is no
// anonymous access.
func WithAuthentication(h http.Handler, authn auth.Authenticator) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := authn.Authenticate(r)
		if !ok {
			if err != nil {
				slog.Debug("authentication failed", "path", r.URL.Path, "err", err)
			}
			writeStatus(w, wire.NewUnauthorized())
			return
		}
		r.Header.Del("Authorization")
		h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), auth.WithAuthenticatedGroup(u))))
	})
}
