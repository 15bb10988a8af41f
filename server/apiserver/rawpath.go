package apiserver

import (
	"net/http"
	"path"
)

// rawPaths routes a path as it was sent, as kube-apiserver's muxes do:
// http.ServeMux answers a path with an empty, "." or ".." segment
// (/api//v1/namespaces, /api/v1/./namespaces, …/configmaps/..) with a 307
// to its cleaned form, which a client that follows redirects then sends
// with the same method (a DELETE of /api/v1/namespaces/a/configmaps/..
// would delete the namespace a). kube routes such a path as it is: to its
// 404 for a path nothing serves, or, for a name "." or "..", its 400.
// Here it goes to api, which answers it so; every other path to mux.
// Either way it has been authenticated and authorized as sent, by the
// filters outside.
type rawPaths struct {
	mux *http.ServeMux
	api http.Handler
}

func (m rawPaths) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isCleanPath(r.URL.EscapedPath()) && r.Method != http.MethodConnect {
		m.api.ServeHTTP(w, r)
		return
	}
	m.mux.ServeHTTP(w, r)
}

// isCleanPath reports whether http.ServeMux would take p as it is, not
// redirect it to its clean form: rooted, with no empty, "." or ".."
// segment (a trailing slash is kept).
func isCleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if p[len(p)-1] == '/' && c != "/" {
		c += "/"
	}
	return c == p
}
