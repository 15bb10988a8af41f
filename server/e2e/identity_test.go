package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/server/apiserver"
)

const (
	bobIdentityToken = "bob-identity-token"
	// bob may do anything in namespace team-a, and nothing else.
	bobPolicy = `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"bob","namespace":"team-a","resource":"*","apiGroup":"*"}}`
)

// identityServer runs serve with a token file (bob) and bob's ABAC policy.
func identityServer(t *testing.T) *testServer {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	policy := filepath.Join(dir, "policy.jsonl")
	if err := os.WriteFile(tokens, []byte(bobIdentityToken+`,bob,2001,"dev,qa"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(bobPolicy+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.TokenAuthFile = tokens
		o.AuthorizationPolicyFile = policy
	})
}

// tokenKubeconfig writes a kubeconfig for s that authenticates with token
// only (the server's own kubeconfig carries the admin certificate, which
// would win).
func tokenKubeconfig(t *testing.T, s *testServer, token string) string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, s.Credentials().CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + s.URL() + `", certificate-authority: "` + ca + `"}}]
users: [{name: u, user: {token: "` + token + `"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func tokenRestConfig(s *testServer, token string) *rest.Config {
	return &rest.Config{Host: s.URL(), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.Credentials().CAPEM}}
}

// TestKubectlAuthWhoamiAndCanI: kubectl auth whoami, can-i and can-i
// --list answer for the admin and for an ABAC-restricted token user.
func TestKubectlAuthWhoamiAndCanI(t *testing.T) {
	s := identityServer(t)
	bob := tokenKubeconfig(t, s, bobIdentityToken)

	out := kubectl(t, s, "", "auth", "whoami")
	if !strings.Contains(out, "Username") || !strings.Contains(out, "admin") ||
		!strings.Contains(out, "[system:masters system:authenticated]") {
		t.Errorf("admin whoami:\n%s", out)
	}
	out = kubectl(t, s, "", "--kubeconfig", bob, "auth", "whoami")
	for _, want := range []string{"bob", "2001", "[dev qa system:authenticated]"} {
		if !strings.Contains(out, want) {
			t.Errorf("bob whoami lacks %q:\n%s", want, out)
		}
	}

	if out := kubectl(t, s, "", "auth", "can-i", "create", "configmaps"); strings.TrimSpace(out) != "yes" {
		t.Errorf("admin can-i create configmaps: %q", out)
	}
	out, err := kubectlErr(t, s, "", "--kubeconfig", bob, "auth", "can-i", "create", "configmaps", "-n", "default")
	// kube's ABAC gives its reason: "no - No policy matched."
	if err == nil || !strings.HasPrefix(out, "no") {
		t.Errorf("bob can-i create configmaps -n default: %q, %v", out, err)
	}
	if out := kubectl(t, s, "", "--kubeconfig", bob, "auth", "can-i", "create", "configmaps", "-n", "team-a"); strings.TrimSpace(out) != "yes" {
		t.Errorf("bob can-i create configmaps -n team-a: %q", out)
	}

	out = kubectl(t, s, "", "--kubeconfig", bob, "auth", "can-i", "--list", "-n", "team-a")
	for _, want := range []string{"*.*", "selfsubjectreviews.authentication.k8s.io", "selfsubjectaccessreviews.authorization.k8s.io",
		"selfsubjectrulesreviews.authorization.k8s.io"} {
		if !strings.Contains(out, want) {
			t.Errorf("bob can-i --list -n team-a lacks %q:\n%s", want, out)
		}
	}
	out = kubectl(t, s, "", "--kubeconfig", bob, "auth", "can-i", "--list", "-n", "default")
	if strings.Contains(out, "*.*") || !strings.Contains(out, "selfsubjectreviews.authentication.k8s.io") {
		t.Errorf("bob can-i --list -n default:\n%s", out)
	}
}

// TestAccessAndTokenReviews: SubjectAccessReview and TokenReview through
// client-go; a user without the right is forbidden; bad reviews get
// kube's 422 and 400.
func TestAccessAndTokenReviews(t *testing.T) {
	s := identityServer(t)
	admin := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()

	sar := func(ns string) *authorizationv1.SubjectAccessReview {
		return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "bob", Groups: []string{"dev"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "configmaps"},
		}}
	}
	got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar("team-a"), metav1.CreateOptions{})
	if err != nil || !got.Status.Allowed {
		t.Fatalf("SAR bob team-a: %+v, %v", got, err)
	}
	got, err = admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar("default"), metav1.CreateOptions{})
	if err != nil || got.Status.Allowed || got.Status.Reason != "No policy matched." {
		t.Fatalf("SAR bob default: %+v, %v", got.Status, err)
	}
	lsar := &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}, Spec: sar("team-a").Spec}
	lgot, err := admin.AuthorizationV1().LocalSubjectAccessReviews("team-a").Create(ctx, lsar, metav1.CreateOptions{})
	if err != nil || !lgot.Status.Allowed {
		t.Fatalf("LSAR bob team-a: %+v, %v", lgot, err)
	}

	tr, err := admin.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: bobIdentityToken}}, metav1.CreateOptions{})
	if err != nil || !tr.Status.Authenticated || tr.Status.User.Username != "bob" || tr.Status.User.UID != "2001" ||
		!slices.Equal(tr.Status.User.Groups, []string{"dev", "qa", "system:authenticated"}) {
		t.Fatalf("TokenReview bob: %+v, %v", tr, err)
	}
	tr, err = admin.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"}}, metav1.CreateOptions{})
	if err != nil || tr.Status.Authenticated || tr.Status.User.Username != "" {
		t.Fatalf("TokenReview bad token: %+v, %v", tr, err)
	}

	// bob may create self reviews, not reviews of others.
	bob := kubernetes.NewForConfigOrDie(tokenRestConfig(s, bobIdentityToken))
	if _, err := bob.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar("team-a"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bob SAR: %v, want 403", err)
	}
	if _, err := bob.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: bobIdentityToken}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bob TokenReview: %v, want 403", err)
	}
	ssar, err := bob.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "team-a", Verb: "delete", Resource: "secrets"}}}, metav1.CreateOptions{})
	if err != nil || !ssar.Status.Allowed {
		t.Errorf("bob SSAR: %+v, %v", ssar, err)
	}

	// Bad input.
	_, err = admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("SAR without attributes: %v, want 422", err)
	}
	c := httpsClient(t, s)
	code, st := doStatus(t, c, "POST", s.URL()+"/apis/authorization.k8s.io/v1/subjectaccessreviews", s.Credentials().AdminToken,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`))
	if code != http.StatusBadRequest {
		t.Errorf("SAR of kind ConfigMap: %d %+v", code, st)
	}
	// Create only, never stored: other verbs are 405, items 404.
	code, _ = doStatus(t, c, "GET", s.URL()+"/apis/authorization.k8s.io/v1/subjectaccessreviews", s.Credentials().AdminToken, nil)
	if code != http.StatusMethodNotAllowed {
		t.Errorf("GET subjectaccessreviews: %d, want 405", code)
	}
	code, _ = doStatus(t, c, "GET", s.URL()+"/apis/authentication.k8s.io/v1/tokenreviews/x", s.Credentials().AdminToken, nil)
	if code != http.StatusNotFound {
		t.Errorf("GET tokenreviews/x: %d, want 404", code)
	}
}
