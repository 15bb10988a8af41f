package filters

import (
	"net/http"

	"github.com/listwatch/listwatch/server/request"
)

// IsLongRunning reports whether r may legitimately last as long as the
// client wants: kube's defaults, the verbs watch and proxy and the
// subresources attach, exec, proxy, log and portforward. Without a
// request.Info in the context, a watch query parameter (other than
// false/0) counts as a watch.
func IsLongRunning(r *http.Request) bool {
	if info, ok := request.InfoFrom(r.Context()); ok {
		switch info.Verb {
		case "watch", "proxy":
			return true
		}
		if info.IsResourceRequest {
			switch info.Subresource {
			case "attach", "exec", "proxy", "log", "portforward":
				return true
			}
		}
		return false
	}
	return watchQuery(r)
}

// watchQuery reads r's watch parameter as kube's parameter codec does.
func watchQuery(r *http.Request) bool { return request.IsWatch(r.URL.Query()) }

// isMutating reports whether r changes state, for the separate in-flight
// limits: everything but get, list and watch (and GET/HEAD/OPTIONS when
// there is no request info).
func isMutating(r *http.Request) bool {
	if info, ok := request.InfoFrom(r.Context()); ok {
		switch info.Verb {
		case "get", "list", "watch":
			return false
		}
		return true
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}
