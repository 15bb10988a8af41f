package server

import (
	"fmt"
	"strings"

	validationpath "k8s.io/apimachinery/pkg/api/validation/path"

	"github.com/listwatch/listwatch/wire"
)

// keyError is kube's store's key function's refusal of the path's
// namespace and name, in its order: a namespaced object without a
// namespace (a path with an empty namespace segment,
// /api/v1/namespaces//configmaps/x, which kube's router takes with
// namespace "") is its 400 "Namespace parameter required.", before the
// name is looked at (pathNameError).
func keyError(namespaced bool, ns, name string) error {
	if namespaced && ns == "" {
		return wire.NewBadRequest("Namespace parameter required.")
	}
	return pathNameError(name)
}

// keyError is keyError for the call's resource, namespace and name.
func (c *call) keyError(name string) error { return keyError(c.res.namespaced, c.ns, name) }

// pathNameError is kube's store's refusal of an object's name from the
// path that cannot be a path segment: "." and "..", or one with "%" (or
// "/"), as %2E, .. (sent as is), a%25b arrive. kube's key function
// refuses it with this 400 when a get, update, patch or delete first
// builds the object's key, after the handler has read the request's
// options and body: so the name is checked there (get, update, patch,
// delete and their scale forms; where an eviction, a binding, a connect
// request or a token request reads the object), never before a refusal
// kube's handler makes first. nil for a valid name.
func pathNameError(name string) error {
	msgs := validationpath.IsValidPathSegmentName(name)
	if len(msgs) == 0 {
		return nil
	}
	return wire.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", name, strings.Join(msgs, ";")))
}
