package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/listwatch/listwatch/server/request"
)

func TestIsPublicInfo(t *testing.T) {
	for _, tt := range []struct {
		verb, path string
		want       bool
	}{
		{"get", "/healthz", true}, {"get", "/livez", true}, {"get", "/readyz", true}, {"get", "/version", true},
		{"get", "/version/", true}, {"get", "/readyz/ping", false}, {"get", "/healthz/etcd", false}, {"get", "/healthz/", false},
		{"get", "/healthzx", false}, {"get", "/versions", false}, {"get", "/", false}, {"get", "/api", false},
		{"get", "/api/v1/healthz", false}, {"get", "/metrics", false}, {"get", "", false},
		{"post", "/healthz", false}, {"head", "/version", false}, {"delete", "/readyz", false},
	} {
		if got := IsPublicInfo(tt.verb, tt.path); got != tt.want {
			t.Errorf("IsPublicInfo(%q, %q) = %v", tt.verb, tt.path, got)
		}
	}
}

func TestAnonymousPublicInfo(t *testing.T) {
	errBad := errors.New("bad token")
	inner := AuthenticatorFunc(func(r *http.Request) (*request.User, bool, error) {
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			return &request.User{Name: "bob"}, true, nil
		case "":
			return nil, false, nil
		}
		return nil, false, errBad
	})
	a := AnonymousPublicInfo{Authenticator: inner}
	for _, tt := range []struct {
		method, path, authz string
		user                string // "" for not authenticated
		err                 error
	}{
		{"GET", "/healthz", "", UserAnonymous, nil},
		{"GET", "/readyz/ping", "", "", nil}, // a single check is not public info, as in kube
		{"GET", "/healthz", "Bearer good", "bob", nil},
		{"GET", "/healthz", "Bearer bad", "", errBad}, // a bad credential is never anonymous
		{"GET", "/api", "", "", nil},
		{"POST", "/healthz", "", "", nil},
		{"GET", "/api/v1/namespaces/default/pods", "", "", nil},
	} {
		r := httptest.NewRequest(tt.method, tt.path, nil)
		if tt.authz != "" {
			r.Header.Set("Authorization", tt.authz)
		}
		u, ok, err := a.Authenticate(r)
		if !errors.Is(err, tt.err) || ok != (tt.user != "") || (ok && u.Name != tt.user) {
			t.Errorf("%s %s (%q): %+v %v %v, want user %q err %v", tt.method, tt.path, tt.authz, u, ok, err, tt.user, tt.err)
		}
		if ok && tt.user == UserAnonymous {
			if !slices.Equal(u.Groups, []string{GroupUnauthenticated}) {
				t.Errorf("anonymous groups %v", u.Groups)
			}
			if got := WithAuthenticatedGroup(u); slices.Contains(got.Groups, GroupAuthenticated) {
				t.Errorf("anonymous user put in %s", GroupAuthenticated)
			}
		}
	}
}
