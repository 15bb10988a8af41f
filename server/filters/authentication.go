package filters

import (
	"log/slog"
	"net/http"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// Authentication puts the user authn finds into the request context
// (request.WithUser), in group system:authenticated (the anonymous user of
// auth.AnonymousPublicInfo stays in system:unauthenticated only), and
// removes the Authorization header so no handler can replay the credential.
// A request that no authenticator accepts gets 401 Unauthorized. Each
// attempt is counted in m's authentication_attempts (m may be nil): that is
// the only metric a request without valid credentials reaches.
func Authentication(authn auth.Authenticator, m *RequestMetrics) Filter {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, ok, err := authn.Authenticate(r)
			m.authenticated(ok, err)
			if !ok {
				if err != nil {
					slog.Debug("authentication failed", "path", r.URL.Path, "err", err)
				}
				if r.ProtoMajor == 2 {
					// As kube (UnauthenticatedHTTP2DOSMitigation): an
					// unauthenticated client does not keep an HTTP/2
					// connection, which is costly and prone to abuse;
					// the server sends GOAWAY after this answer.
					w.Header().Set("Connection", "close")
				}
				writeStatus(w, r, wire.NewUnauthorized())
				return
			}
			r.Header.Del("Authorization")
			u = auth.WithAuthenticatedGroup(u)
			h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
		})
	}
}
