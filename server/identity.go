package server

import (
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install" // registers authentication.k8s.io in legacyscheme
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"  // registers authorization.k8s.io in legacyscheme
	"k8s.io/kubernetes/pkg/registry/authentication/selfsubjectreview"
	"k8s.io/kubernetes/pkg/registry/authentication/tokenreview"
	"k8s.io/kubernetes/pkg/registry/authorization/localsubjectaccessreview"
	"k8s.io/kubernetes/pkg/registry/authorization/selfsubjectaccessreview"
	"k8s.io/kubernetes/pkg/registry/authorization/selfsubjectrulesreview"
	"k8s.io/kubernetes/pkg/registry/authorization/subjectaccessreview"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// The identity APIs: authentication.k8s.io's TokenReview and
// SelfSubjectReview, authorization.k8s.io's SubjectAccessReview,
// LocalSubjectAccessReview, SelfSubjectAccessReview and
// SelfSubjectRulesReview. They are virtual resources: create only, never
// stored, answered by kube's own REST implementations over the server's
// authenticator and authorizer (auth.KubeAuthorizer,
// auth.KubeTokenAuthenticator).

const (
	groupAuthentication = "authentication.k8s.io"
	groupAuthorization  = "authorization.k8s.io"
)

// The reviews' v1 types are decodable from protobuf bodies, which kubectl
// and client-go's typed clients send.
func init() {
	if err := authenticationv1.AddToScheme(protobufScheme); err != nil {
		panic(err)
	}
	if err := authorizationv1.AddToScheme(protobufScheme); err != nil {
		panic(err)
	}
}

// identityResources are the virtual resources of the identity APIs, as
// kube-apiserver v1.37 describes them in discovery.
func identityResources() []*resource {
	v := func(group, plural, kind string, namespaced bool) *resource {
		return &resource{group: group, version: "v1", plural: plural, singular: kind2singular(plural), kind: kind,
			namespaced: namespaced, keyGroup: group, virtual: true}
	}
	return []*resource{
		v(groupAuthentication, "selfsubjectreviews", "SelfSubjectReview", false),
		v(groupAuthentication, "tokenreviews", "TokenReview", false),
		v(groupAuthorization, "localsubjectaccessreviews", "LocalSubjectAccessReview", true),
		v(groupAuthorization, "selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
		v(groupAuthorization, "selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
		v(groupAuthorization, "subjectaccessreviews", "SubjectAccessReview", false),
	}
}

// reviewKinds are the kinds of the identity APIs' reviews, in their
// served version: their writes have managed fields, as every kind's
// (ssa.go's type converter knows them).
func reviewKinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, r := range identityResources() {
		out = append(out, schema.GroupVersionKind{Group: r.group, Version: r.version, Kind: r.kind})
	}
	return out
}

// kind2singular: the singular of each review resource is its plural
// without the final "s".
func kind2singular(plural string) string { return plural[:len(plural)-1] }

// reviewer is one virtual resource's REST implementation and typing.
type reviewer struct {
	typed *typedKind
	rest  rest.Creater
}

// newReviewers builds kube's REST implementations of the identity APIs
// over authz and the token authenticator tokens (nil: TokenReview returns
// the review unanswered, as kube's does without one).
func newReviewers(authz auth.Authorizer, tokens auth.Authenticator, audiences []string) map[string]*reviewer {
	if authz == nil {
		authz = auth.NewAuthorizer(nil)
	}
	kauthz := auth.KubeAuthorizer{Authorizer: authz}
	tr := tokenreview.NewREST(nil, audiences)
	if tokens != nil {
		tr = tokenreview.NewREST(auth.KubeTokenAuthenticator{Authenticator: tokens, APIAudiences: audiences}, audiences)
	}
	typed := func(group, kind string) *typedKind {
		return &typedKind{
			scheme:   legacyscheme.Scheme,
			external: schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind},
			internal: schema.GroupVersionKind{Group: group, Version: runtime.APIVersionInternal, Kind: kind},
		}
	}
	return map[string]*reviewer{
		groupAuthentication + "/selfsubjectreviews": {typed(groupAuthentication, "SelfSubjectReview"), selfsubjectreview.NewREST()},
		groupAuthentication + "/tokenreviews":       {typed(groupAuthentication, "TokenReview"), tr},
		groupAuthorization + "/localsubjectaccessreviews": {typed(groupAuthorization, "LocalSubjectAccessReview"),
			localsubjectaccessreview.NewREST(kauthz, legacyscheme.Scheme)},
		groupAuthorization + "/selfsubjectaccessreviews": {typed(groupAuthorization, "SelfSubjectAccessReview"),
			selfsubjectaccessreview.NewREST(kauthz, legacyscheme.Scheme)},
		groupAuthorization + "/selfsubjectrulesreviews": {typed(groupAuthorization, "SelfSubjectRulesReview"),
			selfsubjectrulesreview.NewREST(kauthz)},
		groupAuthorization + "/subjectaccessreviews": {typed(groupAuthorization, "SubjectAccessReview"),
			subjectaccessreview.NewREST(kauthz, legacyscheme.Scheme)},
	}
}

// review answers POST on a virtual resource: the decoded review, its
// managedFields recorded, answered by kube's REST implementation, 201
// Created. Nothing is stored.
func (c *call) review() error {
	rv := c.s.reviewers[c.res.group+"/"+c.res.plural]
	if rv == nil {
		return methodNotAllowed()
	}
	if err := c.checkWriteOptions("CreateOptions"); err != nil {
		return err
	}
	d, err := c.decodeBody()
	if err != nil {
		return err
	}
	obj, err := c.decodeTyped(rv.typed, d)
	if err != nil {
		return err
	}
	// kube's create handler records the write in managedFields before
	// the REST implementation sees the review: kept in the answer of
	// those that answer the review sent (access reviews, TokenReview),
	// and in what their validation quotes.
	if obj, err = c.manageTyped(rv.typed, obj, nil); err != nil {
		return err
	}
	ctx := c.strategyContext(true)
	if u, ok := request.UserFrom(c.r.Context()); ok {
		ctx = genericapirequest.WithUser(ctx, auth.UserToKube(u))
	}
	out, err := rv.rest.Create(ctx, obj, nil, &metav1.CreateOptions{})
	if err != nil {
		return kubeStatus(err)
	}
	external, err := rv.typed.scheme.New(rv.typed.external)
	if err != nil {
		return wire.NewInternalError(err)
	}
	if err := rv.typed.scheme.Convert(out, external, nil); err != nil {
		return wire.NewInternalError(err)
	}
	external.GetObjectKind().SetGroupVersionKind(rv.typed.external)
	answer, ok := external.(subresourceObject)
	if !ok {
		return wire.NewInternalError(fmt.Errorf("%T has no protobuf encoding", external))
	}
	// In the media type negotiated, protobuf included, as kube's create
	// handler encodes the review it answers (no Table: tableConverts).
	return c.writeExternal(http.StatusCreated, rv.typed.external.GroupVersion().String(), rv.typed.external.Kind, answer)
}
