package filters

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
)

// Impersonation runs a request that asks to act as someone else (kubectl
// --as and --as-group, client-go's Impersonate config: the headers
// Impersonate-User, -Uid, -Group and -Extra-*) as that user, once authz
// allows the sender each part of it; the filters after it (authorization
// among them) see only the impersonated user. It is kube-apiserver's own
// filter, the constrained impersonation on by default since kube 1.36,
// which keeps the "impersonate" verb on users, groups, serviceaccounts,
// uids and userextras, and adds the narrower "impersonate:…" verbs with
// their "impersonate-on:…" checks. Its refusals are kube's: 403 with
// kube's message, 400 for a group, uid or extra without a user. A request
// without those headers passes as it is. It runs after Authentication and
// the request info, before Authorization, as in kube.
func Impersonation(authz auth.Authorizer) Filter {
	kubeAuthz := auth.KubeAuthorizer{Authorizer: authz}
	return func(h http.Handler) http.Handler {
		// What kube's filter passes on: the impersonated user, in
		// kube's context, made ours.
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ku, _ := genericrequest.UserFrom(r.Context())
			h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), auth.UserFromKube(ku))))
		})
		kube := impersonation.WithConstrainedImpersonation(inner, kubeAuthz, request.StatusCodecs)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !asksImpersonation(r.Header) {
				h.ServeHTTP(w, r)
				return
			}
			ctx := r.Context()
			u, _ := request.UserFrom(ctx)
			ctx = genericrequest.WithUser(ctx, auth.UserToKube(u))
			if info, ok := request.InfoFrom(ctx); ok {
				ctx = genericrequest.WithRequestInfo(ctx, kubeRequestInfo(info))
			}
			kube.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// asksImpersonation reports whether h has an Impersonate-* header.
func asksImpersonation(h http.Header) bool {
	for k := range h { // keys are canonical: net/http made them so
		if strings.HasPrefix(k, "Impersonate-") {
			return true
		}
	}
	return false
}

// kubeRequestInfo is info as kube's request info filter would have
// made it, which kube's impersonation reads its authorizer attributes
// from.
func kubeRequestInfo(info *request.Info) *genericrequest.RequestInfo {
	ki := &genericrequest.RequestInfo{
		IsResourceRequest: info.IsResourceRequest,
		Path:              info.Path,
		Verb:              info.Verb,
		APIPrefix:         info.APIPrefix,
		APIGroup:          info.APIGroup,
		APIVersion:        info.APIVersion,
		Namespace:         info.Namespace,
		Resource:          info.Resource,
		Subresource:       info.Subresource,
		Name:              info.Name,
	}
	for _, p := range []string{info.Resource, info.Name, info.Subresource} {
		if p != "" {
			ki.Parts = append(ki.Parts, p)
		}
	}
	return ki
}
