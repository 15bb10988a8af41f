package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	return tokenKubeconfigFor(t, s.URL(), s.Credentials().CAPEM, token)
}

func tokenKubeconfigFor(t *testing.T, url string, caPEM []byte, token string) string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + url + `", certificate-authority: "` + ca + `"}}]
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
	return tokenRestConfigFor(s.URL(), s.Credentials().CAPEM, token)
}

func tokenRestConfigFor(url string, caPEM []byte, token string) *rest.Config {
	return &rest.Config{Host: url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
}

// TestKubectlAuthWhoamiAndCanI: kubectl auth whoami, can-i and can-i
// --list answer for the admin and for an ABAC-restricted token user.
func TestKubectlAuthWhoamiAndCanI(t *testing.T) {
	t.Parallel()
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
	// kube's ABAC gives its reason, after its mode: "no - abac: No policy matched."
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
	t.Parallel()
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
	if err != nil || got.Status.Allowed || got.Status.Reason != "abac: No policy matched." {
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

var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// TestIdentityMatchesKube: kubectl auth whoami and can-i print the same
// against serve as against a real kube-apiserver, for the admin and for
// a user without any grant (kube: RBAC with its bootstrap roles; serve:
// no policy file).
func TestIdentityMatchesKube(t *testing.T) {
	t.Parallel()
	kube := kubeServer(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(kube.UserToken+",alice,alice-uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Both servers authorize with RBAC and kube's bootstrap policy
	// (system:discovery, system:basic-user bound to every authenticated
	// user).
	s := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.TokenAuthFile = tokens
	})

	run := func(kubeconfig string, args ...string) string {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlPath(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out) + "(" + err.Error() + ")"
		}
		return string(out)
	}
	kcfg := map[string][2]string{
		"admin": {tokenKubeconfigFor(t, kube.URL, kube.Creds.CAPEM, kube.Creds.AdminToken),
			tokenKubeconfig(t, s, s.Credentials().AdminToken)},
		"alice": {tokenKubeconfigFor(t, kube.URL, kube.Creds.CAPEM, kube.UserToken),
			tokenKubeconfig(t, s, kube.UserToken)},
	}
	for _, c := range []struct {
		user string
		args []string
	}{
		{"admin", []string{"auth", "whoami"}},
		{"alice", []string{"auth", "whoami"}},
		{"alice", []string{"auth", "whoami", "-o", "json"}},
		{"admin", []string{"auth", "can-i", "create", "configmaps"}},
		{"admin", []string{"auth", "can-i", "delete", "tokenreviews.authentication.k8s.io"}},
		{"alice", []string{"auth", "can-i", "create", "configmaps", "-n", "default"}},
		{"alice", []string{"auth", "can-i", "create", "selfsubjectaccessreviews.authorization.k8s.io"}},
		{"alice", []string{"auth", "can-i", "create", "subjectaccessreviews.authorization.k8s.io"}},
	} {
		k, l := run(kcfg[c.user][0], c.args...), run(kcfg[c.user][1], c.args...)
		k, l = timestamp.ReplaceAllString(k, "T"), timestamp.ReplaceAllString(l, "T")
		if k != l {
			t.Errorf("%s: kubectl %s:\nkube-apiserver:\n%s\nlistwatch:\n%s", c.user, strings.Join(c.args, " "), k, l)
		}
	}

	// Raw requests, as the admin: status code, reason and message.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(kube.Creds.CAPEM)
	ktr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(ktr.CloseIdleConnections)
	kc, lc := &http.Client{Transport: ktr}, httpsClient(t, s)
	const sars = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
	for _, r := range []struct {
		method, path, body string
		codeOnly           bool // the message of the shared body decoder differs from kube's (see the report)
	}{
		{"POST", sars, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"bob"}}`, false},
		{"POST", sars, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"resourceAttributes":{"verb":"get"}}}`, false},
		{"POST", sars, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, true},
		{"POST", sars, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"bob","resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"path":"/x","verb":"get"}}}`, false},
		{"POST", sars, `not json`, true},
		{"GET", sars, "", false},
		{"DELETE", sars, "", false},
		{"GET", sars + "/x", "", false},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{}}`, false},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x","audiences":["other"]}}`, false},
		{"POST", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"bob","resourceAttributes":{"verb":"get","namespace":"other"}}}`, false},
		{"POST", "/apis/authorization.k8s.io/v1/localsubjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"bob","resourceAttributes":{"verb":"get"}}}`, false},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{}}`, false},
	} {
		var body []byte
		if r.body != "" {
			body = []byte(r.body)
		}
		kcode, kst := doStatus(t, kc, r.method, kube.URL+r.path, kube.Creds.AdminToken, body)
		lcode, lst := doStatus(t, lc, r.method, s.URL()+r.path, s.Credentials().AdminToken, body)
		if kcode != lcode || kst.Reason != lst.Reason || (!r.codeOnly && kst.Message != lst.Message) {
			t.Errorf("%s %s %s:\nkube-apiserver: %d %s %q\nlistwatch:      %d %s %q", r.method, r.path, r.body,
				kcode, kst.Reason, kst.Message, lcode, lst.Reason, lst.Message)
		}
	}

	// TokenReviews: the admin's token with the API audience (implied or
	// asked), another audience, and a bad token.
	tokenReview := func(c *kubernetes.Clientset, token string, auds ...string) authenticationv1.TokenReviewStatus {
		tr, err := c.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenReview: %v", err)
		}
		tr.Status.User.UID = "" // kube's admin token has another uid
		return tr.Status
	}
	kcs := kubernetes.NewForConfigOrDie(tokenRestConfigFor(kube.URL, kube.Creds.CAPEM, kube.Creds.AdminToken))
	lcs := kubernetes.NewForConfigOrDie(tokenRestConfig(s, s.Credentials().AdminToken))
	for _, c := range []struct {
		kubeToken, ourToken string
		auds                []string
	}{
		{kube.Creds.AdminToken, s.Credentials().AdminToken, nil},
		{kube.Creds.AdminToken, s.Credentials().AdminToken, []string{"https://kubernetes.default.svc", "other"}},
		{kube.Creds.AdminToken, s.Credentials().AdminToken, []string{"other"}},
		{"not-a-token", "not-a-token", nil},
	} {
		k, l := tokenReview(kcs, c.kubeToken, c.auds...), tokenReview(lcs, c.ourToken, c.auds...)
		if !equality.Semantic.DeepEqual(k, l) {
			t.Errorf("TokenReview audiences %q:\nkube-apiserver: %+v\nlistwatch:      %+v", c.auds, k, l)
		}
	}
}
