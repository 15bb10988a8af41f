package filters

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

var errNoRequestInfo = errors.New("filters: no request info in context")

// Authorization asks authz about the user and request info in the
// context. Allow passes the request on; an error without Allow is a 500;
// anything else is 403 Forbidden with kube's message, e.g.
//
//	configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default"
//
// followed by ": <reason>" when the authorizer gave one. It must run inside
// the filter that sets the request info. A get of public information
// (auth.IsPublicInfo: /healthz, /livez, /readyz, /version) is allowed to
// everyone, as kube's system:public-info-viewer role is bound to
// system:authenticated and system:unauthenticated.
func Authorization(authz auth.Authorizer) Filter {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			info, ok := request.InfoFrom(ctx)
			if !ok {
				writeStatus(w, r, wire.NewInternalError(errNoRequestInfo))
				return
			}
			if !info.IsResourceRequest && auth.IsPublicInfo(info.Verb, info.Path) {
				// kube's system:public-info-viewer, bound to every user,
				// authenticated or anonymous.
				h.ServeHTTP(w, r)
				return
			}
			u, _ := request.UserFrom(ctx)
			d, reason, err := authz.Authorize(ctx, u, info)
			if d == auth.DecisionAllow {
				h.ServeHTTP(w, r)
				return
			}
			if err != nil {
				writeStatus(w, r, wire.NewInternalError(err))
				return
			}
			writeStatus(w, r, Forbidden(u, info, reason))
		})
	}
}

// Forbidden is the 403 Status kube-apiserver writes when u may not do info.
func Forbidden(u *request.User, info *request.Info, reason string) *wire.Status {
	msg := htmlSanitizer.Replace(forbiddenMessage(u, info))
	if reason != "" {
		msg += ": " + reason
	}
	gr := wire.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	if gr.Group != "" || gr.Resource != "" {
		return wire.NewForbidden(gr, info.Name, msg)
	}
	s := wire.NewForbidden(gr, info.Name, msg)
	s.Message = "forbidden: " + msg
	return s
}

// htmlSanitizer is kube's: the message may be shown in a browser.
var htmlSanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

func forbiddenMessage(u *request.User, info *request.Info) string {
	name := ""
	if u != nil {
		name = u.Name
	}
	if !info.IsResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", name, info.Verb, info.Path)
	}
	resource := info.Resource
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	if info.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q",
			name, info.Verb, resource, info.APIGroup, info.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope",
		name, info.Verb, resource, info.APIGroup)
}
