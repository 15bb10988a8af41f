// Package auth answers two questions about an API request: who sent it
// (authentication) and may they do it (authorization). Both follow
// kube-apiserver's rules, so the same token and policy files work in either.
//
// Authentication. An Authenticator looks at the request and returns a
// *request.User and true, false when the request carries no credential it
// recognises, or an error for a credential it recognises but rejects. Union
// tries several in order; the first success wins. Two are provided:
//
//   - X509: the client certificate that the TLS layer verified against the
//     cluster CA (tls.VerifyClientCertIfGiven); user = CN, groups = O.
//   - TokenFile: Kubernetes' static token file (--token-auth-file), read by
//     ParseTokenFile, matched against "Authorization: Bearer <token>" in
//     constant time.
//
// Authorization. An Authorizer returns Allow, Deny or NoOpinion for a user
// and a request.Info. NewAuthorizer builds the server's chain: members of
// system:masters are always allowed; then the ABAC policy, if any (one JSON
// Policy per line, ParsePolicyFile); with no policy file nobody else is
// allowed. ABAC matching is kube's, including its quirks: a readonly policy
// still allows get/list/watch only, "*" for user or group means every
// authenticated user, and a nonResourcePath ending in "*" is a prefix.
//
// Caveats: there is no anonymous user; a request no authenticator accepts is
// refused with 401 by the filter in server/filters. Tokens are loaded once;
// reload by building a new authenticator.
package auth
