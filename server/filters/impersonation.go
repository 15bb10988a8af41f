package filters

import (
	"errors"
	"net/http"
	"strings"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// refuseImpersonation is the Status for a request that asks to act as
// someone else (kubectl --as, client-go's Impersonate config: headers
// Impersonate-User, -Group, -Uid, -Extra-*), or nil when it does not.
// serve does not impersonate: running such a request as its sender would
// answer "can bob do this?" with the sender's rights and write as the
// sender, so it is refused as kube-apiserver refuses a sender not allowed
// to impersonate (403, kube's message, with the reason), or, without
// Impersonate-User, as kube refuses the rest alone (500).
func refuseImpersonation(r *http.Request, u *request.User) *wire.Status {
	asked := false
	for k := range r.Header { // keys are canonical: net/http made them so
		if strings.HasPrefix(k, "Impersonate-") {
			asked = true
			break
		}
	}
	if !asked {
		return nil
	}
	name := r.Header.Get("Impersonate-User")
	if name == "" {
		return wire.NewInternalError(errors.New("requested impersonation without impersonating a user"))
	}
	return Forbidden(u, &request.Info{IsResourceRequest: true, Verb: "impersonate", Resource: "users", Name: name},
		"impersonation is not supported by listwatch serve")
}
