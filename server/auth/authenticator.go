package auth

import (
	"errors"
	"net/http"
	"slices"

	"github.com/listwatch/listwatch/server/request"
)

// Well-known groups.
const (
	// GroupMasters is allowed everything, whatever the policy says.
	GroupMasters = "system:masters"
	// GroupAuthenticated is added to every authenticated user.
	GroupAuthenticated = "system:authenticated"
	// GroupUnauthenticated is kube's group of anonymous requests: only
	// AnonymousPublicInfo authenticates anyone into it.
	GroupUnauthenticated = "system:unauthenticated"
)

// Authenticator identifies the sender of a request.
//
// It returns (user, true, nil) on success; (nil, false, nil) when the
// request carries no credential of its kind; and (nil, false, err) when it
// carries one that is invalid. It must not modify r except, on success, to
// remove the credential it consumed.
type Authenticator interface {
	Authenticate(r *http.Request) (*request.User, bool, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*request.User, bool, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (*request.User, bool, error) { return f(r) }

var _ Authenticator = AuthenticatorFunc(nil)

// Union tries its members in order and returns the first success. When none
// succeeds it returns the errors of all members joined, so a bad token is
// still reported after a missing certificate.
type Union []Authenticator

// Authenticate implements Authenticator.
func (u Union) Authenticate(r *http.Request) (*request.User, bool, error) {
	var errs []error
	for _, a := range u {
		user, ok, err := a.Authenticate(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return user, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}

// WithAuthenticatedGroup returns a copy of u that is in
// system:authenticated, as kube-apiserver adds that group to every user it
// authenticates. The anonymous user (in system:unauthenticated) is returned
// as it is.
func WithAuthenticatedGroup(u *request.User) *request.User {
	if slices.Contains(u.Groups, GroupAuthenticated) || slices.Contains(u.Groups, GroupUnauthenticated) {
		return u
	}
	c := *u
	c.Groups = append(slices.Clip(slices.Clone(u.Groups)), GroupAuthenticated)
	return &c
}
