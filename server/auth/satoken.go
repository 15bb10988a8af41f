package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	kubesa "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
)

// Service-account tokens: the JWTs the serviceaccounts/token subresource
// issues (TokenRequest), checked by kube's own JWT authenticator
// (k8s.io/kubernetes/pkg/serviceaccount JWTTokenAuthenticator with its
// bound-token validator). The validator looks up the service account and
// the object the token is bound to (pod, secret, node) on every request,
// through ServiceAccountGetter: a linearizable read of the store, so a
// token stops working as soon as its service account or bound object is
// deleted or recreated.

// ServiceAccountGetter reads service accounts, pods, secrets and nodes
// from the store, for kube's token validator and TokenRequest. Keys are
// kube's (nodes under "minions"). Admission webhook configurations are not
// served, so tokens bound to them are never valid.
type ServiceAccountGetter struct {
	Store storage.Interface
}

var _ kubesa.ServiceAccountTokenGetter = ServiceAccountGetter{}

// get reads key into out, or returns kube's NotFound for resource/name.
func (g ServiceAccountGetter) get(ctx context.Context, resource, key, name string, out any) error {
	kv, err := g.Store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(kv.Value, out)
}

// GetServiceAccount implements serviceaccount.ServiceAccountTokenGetter.
func (g ServiceAccountGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	var o corev1.ServiceAccount
	return &o, g.get(ctx, "serviceaccounts", "/registry/serviceaccounts/"+namespace+"/"+name, name, &o)
}

// GetPod implements serviceaccount.ServiceAccountTokenGetter.
func (g ServiceAccountGetter) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	var o corev1.Pod
	return &o, g.get(ctx, "pods", "/registry/pods/"+namespace+"/"+name, name, &o)
}

// GetSecret implements serviceaccount.ServiceAccountTokenGetter.
func (g ServiceAccountGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	var o corev1.Secret
	return &o, g.get(ctx, "secrets", "/registry/secrets/"+namespace+"/"+name, name, &o)
}

// GetNode implements serviceaccount.ServiceAccountTokenGetter.
func (g ServiceAccountGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	var o corev1.Node
	return &o, g.get(ctx, "nodes", "/registry/minions/"+name, name, &o)
}

// GetValidatingWebhookConfiguration implements
// serviceaccount.ServiceAccountTokenGetter: always NotFound.
func (g ServiceAccountGetter) GetValidatingWebhookConfiguration(_ context.Context, name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return nil, apierrors.NewNotFound(admissionregistrationv1.Resource("validatingwebhookconfigurations"), name)
}

// GetMutatingWebhookConfiguration implements
// serviceaccount.ServiceAccountTokenGetter: always NotFound.
func (g ServiceAccountGetter) GetMutatingWebhookConfiguration(_ context.Context, name string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return nil, apierrors.NewNotFound(admissionregistrationv1.Resource("mutatingwebhookconfigurations"), name)
}

// ServiceAccountTokens authenticates bearer service-account tokens with
// kube's JWT authenticator. Tokens of other issuers (and anything that is
// not a JWT) are no credential of its kind, so the next authenticator may
// take them; a token of its issuer that fails (signature, expiry,
// audience, deleted service account or bound object) is an error.
type ServiceAccountTokens struct {
	// Token is kube's authenticator (NewServiceAccountTokens builds it).
	Token authenticator.Token
	// APIAudiences are the audiences a token must have one of to be
	// accepted on a request (kube's --api-audiences).
	APIAudiences []string
}

var _ Authenticator = ServiceAccountTokens{}

// NewServiceAccountTokens is kube's bound service-account token
// authenticator: tokens signed by one of keys (public or private keys)
// with one of issuers as iss, validated against getter.
func NewServiceAccountTokens(issuers []string, keys []any, apiAudiences []string, getter kubesa.ServiceAccountTokenGetter) (ServiceAccountTokens, error) {
	pub, err := kubesa.StaticPublicKeysGetter(keys)
	if err != nil {
		return ServiceAccountTokens{}, fmt.Errorf("auth: service-account keys: %w", err)
	}
	return ServiceAccountTokens{
		Token:        kubesa.JWTTokenAuthenticator(issuers, pub, authenticator.Audiences(apiAudiences), kubesa.NewValidator(getter)),
		APIAudiences: apiAudiences,
	}, nil
}

// Authenticate implements Authenticator with kube's bearer rules (see
// TokenFile.Authenticate), for a request to this server: the token must
// be meant for one of the API audiences.
func (s ServiceAccountTokens) Authenticate(r *http.Request) (*request.User, bool, error) {
	tok, ok := bearerToken(r)
	if !ok {
		return nil, false, nil
	}
	ctx := authenticator.WithAudiences(r.Context(), s.APIAudiences)
	resp, ok, err := s.Token.AuthenticateToken(ctx, tok)
	if err != nil {
		return nil, false, fmt.Errorf("auth: service-account token: %w", err)
	}
	if !ok {
		return nil, false, nil
	}
	return UserFromKube(resp.User), true, nil
}

// bearerToken is the token of an "Authorization: Bearer <token>" header,
// with kube's rules (see TokenFile.Authenticate).
func bearerToken(r *http.Request) (string, bool) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return "", false
	}
	parts := strings.SplitN(h, " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}
