// Package auth answers two questions about an API request: who sent it
// (authentication) and may they do it (authorization). Both follow
// kube-apiserver's rules, so the same token and policy files work in either.
//
// Authentication. An Authenticator looks at the request and returns a
// *request.User and true, false when the request carries no credential it
// recognises, or an error for a credential it recognises but rejects. Union
// tries several in order; the first success wins. Two are provided:
//
//   - X509: the client certificate, verified here against the cluster CA
//     (chain, validity, client-auth usage) as kube's x509 authenticator
//     does; the TLS layer only requests it (tls.RequestClientCert), so a bad
//     certificate fails authentication, not the handshake. user = CN,
//     groups = O.
//   - TokenFile: Kubernetes' static token file (--token-auth-file), read by
//     ParseTokenFile, matched against "Authorization: Bearer <token>" in
//     constant time.
//
// Authorization. An Authorizer returns Allow, Deny or NoOpinion for a user
// and a request.Info. NewChain builds the server's chain from kube's
// --authorization-mode list (ValidateModes): members of system:masters are
// always allowed first; then each mode in order: RBAC (kube's RBAC
// authorizer over client-go informers of the server's RBAC objects, see
// RBAC), ABAC (one JSON Policy per line, ParsePolicyFile, matched with
// kube's rules and quirks: a readonly policy allows get/list/watch only,
// "*" for user or group means every authenticated user, a nonResourcePath
// ending in "*" is a prefix), AlwaysAllow, AlwaysDeny. A mode's reason is
// prefixed with its name, as kube's named union does. NewAuthorizer is the
// chain without modes (system:masters and SelfReviews, then an optional
// ABAC policy), for tests and servers built without one.
//
// Anonymous requests: AnonymousPublicInfo makes a request with no
// credential at all system:anonymous (group system:unauthenticated) when it
// GETs public information (IsPublicInfo: exactly /healthz, /livez, /readyz,
// /version and /version/, not a single check's path below them), which the
// authorization filter allows to everyone as kube's system:public-info-viewer
// role does. Any other request
// that no authenticator accepts, and any request with an invalid credential,
// is refused with 401 by the filter in server/filters.
//
// Caveats: tokens are loaded once; reload by building a new authenticator.
package auth
