package auth

import (
	"net/http"

	"github.com/listwatch/listwatch/server/request"
)

// UserAnonymous is the user of a request that carries no credential and
// reads public information.
const UserAnonymous = "system:anonymous"

// publicInfoPaths are the paths kube's system:public-info-viewer
// ClusterRole lets everyone, authenticated or not, GET: exactly these, not
// the paths of single checks below them (/readyz/etcd answers a failure
// with its reason), which in kube need a role that grants them.
var publicInfoPaths = []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}

// IsPublicInfo reports whether a request with this verb and path reads
// public information: a get of /healthz, /livez, /readyz, /version or
// /version/.
func IsPublicInfo(verb, path string) bool {
	if verb != "get" {
		return false
	}
	for _, p := range publicInfoPaths {
		if path == p {
			return true
		}
	}
	return false
}

// AnonymousPublicInfo wraps an authenticator so that a request it finds no
// credential in (not an invalid one) is authenticated as system:anonymous,
// in system:unauthenticated, when it is a GET of public information
// (IsPublicInfo). Every other request without a credential stays
// unauthenticated (401). This is kube-apiserver's anonymous authenticator
// restricted to those paths, behind a union that fails on error: a bad
// token or certificate is a 401 even on /healthz.
type AnonymousPublicInfo struct {
	Authenticator Authenticator
}

var _ Authenticator = AnonymousPublicInfo{}

// Authenticate implements Authenticator.
func (a AnonymousPublicInfo) Authenticate(r *http.Request) (*request.User, bool, error) {
	u, ok, err := a.Authenticator.Authenticate(r)
	if ok || err != nil {
		return u, ok, err
	}
	if r.Method != http.MethodGet || !IsPublicInfo("get", r.URL.Path) {
		return nil, false, nil
	}
	return &request.User{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}}, true, nil
}
