package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/listwatch/listwatch/server/apiserver"
)

// saPod is a pod of service account sa in default.
func saPod(name, sa string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{ServiceAccountName: sa, NodeName: "node-1",
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// whoami is the SelfSubjectReview of a client with token.
func whoami(t *testing.T, s *testServer, token string) (*authenticationv1.SelfSubjectReview, error) {
	t.Helper()
	c := kubernetes.NewForConfigOrDie(tokenRestConfig(s, token))
	return c.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
}

// TestServiceAccountTokenClientGo: a token from CreateToken authenticates
// a client-go clientset as the service account, with kube's groups and
// extra; it stops working when its bound pod or its service account is
// deleted; a token for another audience is refused; TokenReview agrees.
func TestServiceAccountTokenClientGo(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	admin := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()
	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := admin.CoreV1().Pods("default").Create(ctx, saPod("p", "robot"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Discovery lists the subresource as kube does, in the legacy and the
	// aggregated documents.
	legacy, err := admin.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	_, aggregated, err := admin.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, lists := range [][]*metav1.APIResourceList{{legacy}, aggregated} {
		found := false
		for _, l := range lists {
			for _, r := range l.APIResources {
				if l.GroupVersion == "v1" && r.Name == "serviceaccounts/token" {
					found = r.Group == "authentication.k8s.io" && r.Version == "v1" && r.Kind == "TokenRequest" &&
						slices.Equal(r.Verbs, []string{"create"}) && r.Namespaced
					if !found {
						t.Errorf("discovery: %+v", r)
					}
				}
			}
		}
		if !found {
			t.Error("discovery lacks serviceaccounts/token")
		}
	}

	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status.Token == "" || !slices.Equal(tr.Spec.Audiences, []string{apiserver.DefaultServiceAccountIssuer}) ||
		*tr.Spec.ExpirationSeconds != 3600 || tr.Name != "robot" || tr.UID != sa.UID {
		t.Fatalf("token request: %+v", tr)
	}
	r, err := whoami(t, s, tr.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	ui := r.Status.UserInfo
	if ui.Username != "system:serviceaccount:default:robot" || ui.UID != string(sa.UID) ||
		!slices.Equal(ui.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}) ||
		len(ui.Extra["authentication.kubernetes.io/credential-id"]) != 1 {
		t.Errorf("whoami: %+v", ui)
	}

	bound, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err = whoami(t, s, bound.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	if e := r.Status.UserInfo.Extra; !slices.Equal(e["authentication.kubernetes.io/pod-name"], authenticationv1.ExtraValue{"p"}) ||
		!slices.Equal(e["authentication.kubernetes.io/pod-uid"], authenticationv1.ExtraValue{string(pod.UID)}) ||
		!slices.Equal(e["authentication.kubernetes.io/node-name"], authenticationv1.ExtraValue{"node-1"}) {
		t.Errorf("bound whoami extra: %+v", e)
	}

	other, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, s, other.Status.Token); !apierrors.IsUnauthorized(err) {
		t.Errorf("token for audience vault: %v, want 401", err)
	}
	// TokenReview: the token for vault is valid for vault only.
	review := func(token string, auds ...string) *authenticationv1.TokenReview {
		t.Helper()
		out, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if rv := review(other.Status.Token, "vault"); !rv.Status.Authenticated || rv.Status.User.Username != "system:serviceaccount:default:robot" ||
		!slices.Equal(rv.Status.Audiences, []string{"vault"}) {
		t.Errorf("review of vault token for vault: %+v", rv.Status)
	}
	if rv := review(other.Status.Token); rv.Status.Authenticated {
		t.Errorf("review of vault token for the API: %+v", rv.Status)
	}
	if rv := review(tr.Status.Token); !rv.Status.Authenticated {
		t.Errorf("review of API token: %+v", rv.Status)
	}

	// Deleting the bound pod invalidates the bound token at once.
	if err := admin.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: pointerTo[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, s, bound.Status.Token); !apierrors.IsUnauthorized(err) {
		t.Errorf("token of deleted pod: %v, want 401", err)
	}
	if rv := review(bound.Status.Token); rv.Status.Authenticated || rv.Status.Error != "service account token has been invalidated" {
		t.Errorf("review of token of deleted pod: %+v", rv.Status)
	}
	if _, err := whoami(t, s, tr.Status.Token); err != nil {
		t.Errorf("unbound token after pod delete: %v", err)
	}
	// A service account deleted and recreated (new uid) invalidates the
	// tokens of the old one.
	if err := admin.CoreV1().ServiceAccounts("default").Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, s, tr.Status.Token); !apierrors.IsUnauthorized(err) {
		t.Errorf("token of deleted service account: %v, want 401", err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, s, tr.Status.Token); !apierrors.IsUnauthorized(err) {
		t.Errorf("token of recreated service account: %v, want 401", err)
	}
	if rv := review(tr.Status.Token); rv.Status.Authenticated || !strings.Contains(rv.Status.Error, "does not match claim") {
		t.Errorf("review of token of recreated service account: %+v", rv.Status)
	}
}

// tokenRequestErr is the error of a TokenRequest for robot.
func tokenRequestErr(t *testing.T, c kubernetes.Interface, sa string, spec authenticationv1.TokenRequestSpec) error {
	t.Helper()
	_, err := c.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	return err
}

// tokenRequestErrorCases are TokenRequests kube refuses, each with the
// status code it answers, over setupTokenFixture's objects.
func tokenRequestErrorCases(podUID types.UID) []struct {
	name string
	sa   string
	spec authenticationv1.TokenRequestSpec
	code int32
} {
	pod := func(name string, uid types.UID) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: name, UID: uid}
	}
	return []struct {
		name string
		sa   string
		spec authenticationv1.TokenRequestSpec
		code int32
	}{
		{"no such service account", "sat-ghost", authenticationv1.TokenRequestSpec{}, 404},
		{"expiration under 10 minutes", "sat-robot", authenticationv1.TokenRequestSpec{ExpirationSeconds: pointerTo[int64](60)}, 422},
		{"expiration over 2^32 seconds", "sat-robot", authenticationv1.TokenRequestSpec{ExpirationSeconds: pointerTo[int64](1 << 33)}, 422},
		{"bound to a ConfigMap", "sat-robot", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "x"}}, 400},
		{"bound to a missing pod", "sat-robot", authenticationv1.TokenRequestSpec{BoundObjectRef: pod("sat-nope", "")}, 404},
		{"bound to a pod of another service account", "sat-other", authenticationv1.TokenRequestSpec{BoundObjectRef: pod("sat-pod", "")}, 400},
		{"bound pod with a wrong uid", "sat-robot", authenticationv1.TokenRequestSpec{BoundObjectRef: pod("sat-pod", podUID+"x")}, 409},
		{"bound to a missing secret", "sat-robot", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "sat-nope"}}, 404},
		{"bound object without a name", "sat-robot", authenticationv1.TokenRequestSpec{BoundObjectRef: pod("", "")}, 400},
		{"bound to a missing node", "sat-robot", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "sat-nope"}}, 404},
		{"bound to a pod of another group", "sat-robot", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "example.com/v1", Name: "sat-pod"}}, 400},
	}
}

// TestServiceAccountTokenRequestErrors: kube's codes for refused
// TokenRequests.
func TestServiceAccountTokenRequestErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	admin := kubernetes.NewForConfigOrDie(restConfig(t, s))
	pod := setupTokenFixture(t, admin)
	for _, tc := range tokenRequestErrorCases(pod.UID) {
		err := tokenRequestErr(t, admin, tc.sa, tc.spec)
		var st apierrors.APIStatus
		if !errors.As(err, &st) || st.Status().Code != tc.code {
			t.Errorf("%s: %v, want %d", tc.name, err, tc.code)
		}
	}
}

// setupTokenFixture creates service accounts sat-robot and sat-other and
// pod sat-pod of sat-robot in default (or finds them).
func setupTokenFixture(t *testing.T, c kubernetes.Interface) *corev1.Pod {
	t.Helper()
	for _, name := range []string{"sat-robot", "sat-other"} {
		if _, err := c.CoreV1().ServiceAccounts("default").Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	pod, err := c.CoreV1().Pods("default").Create(t.Context(), saPod("sat-pod", "sat-robot"), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		pod, err = c.CoreV1().Pods("default").Get(t.Context(), "sat-pod", metav1.GetOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestServiceAccountTokenKubectl: kubectl create token (with --audience,
// --duration and a bound pod) and kubectl auth whoami with the token.
func TestServiceAccountTokenKubectl(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	kubectl(t, s, "", "create", "serviceaccount", "robot")
	kubectl(t, s, "", "run", "p", "--image=busybox", "--overrides", `{"spec":{"serviceAccountName":"robot"}}`)

	token := strings.TrimSpace(kubectl(t, s, "", "create", "token", "robot", "--duration", "15m"))
	out := kubectl(t, s, "", "--kubeconfig", tokenKubeconfig(t, s, token), "auth", "whoami")
	for _, want := range []string{"system:serviceaccount:default:robot", "[system:serviceaccounts system:serviceaccounts:default system:authenticated]"} {
		if !strings.Contains(out, want) {
			t.Errorf("whoami lacks %q:\n%s", want, out)
		}
	}
	claims := unverifiedClaims(t, token)
	if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 900 {
		t.Errorf("--duration 15m: exp-iat = %v", exp-iat)
	}

	bound := strings.TrimSpace(kubectl(t, s, "", "create", "token", "robot", "--bound-object-kind", "Pod", "--bound-object-name", "p"))
	out = kubectl(t, s, "", "--kubeconfig", tokenKubeconfig(t, s, bound), "auth", "whoami")
	if !strings.Contains(out, "authentication.kubernetes.io/pod-name") || !strings.Contains(out, "[p]") {
		t.Errorf("bound whoami:\n%s", out)
	}

	aud := strings.TrimSpace(kubectl(t, s, "", "create", "token", "robot", "--audience", "vault"))
	if got := unverifiedClaims(t, aud)["aud"]; !slices.Equal(toStrings(got), []string{"vault"}) {
		t.Errorf("--audience vault: aud %v", got)
	}
	out, err := kubectlErr(t, s, "", "--kubeconfig", tokenKubeconfig(t, s, aud), "auth", "whoami")
	if err == nil || !strings.Contains(out, "Unauthorized") {
		t.Errorf("whoami with a vault token: %v\n%s", err, out)
	}

	out, err = kubectlErr(t, s, "", "create", "token", "robot", "--duration", "1m")
	if err == nil || !strings.Contains(out, "may not specify a duration less than 10 minutes") {
		t.Errorf("--duration 1m: %v\n%s", err, out)
	}
}

// unverifiedClaims are a JWT's claims, its signature not checked.
func unverifiedClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	tok, err := jwt.ParseSigned(token)
	if err != nil {
		t.Fatalf("token %q: %v", token, err)
	}
	var c map[string]any
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func toStrings(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			s, _ := e.(string)
			out = append(out, s)
		}
	}
	return out
}

// TestServiceAccountIssuerDiscovery: the OIDC discovery document and the
// JWKS are served to service accounts (kube's bootstrap binding), not to
// other users without a grant; the JWKS verifies a token's signature.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	t.Parallel()
	s := identityServer(t)
	admin := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Credentials().CAPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	get := func(path, token string) (int, http.Header, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	code, h, b := get("/.well-known/openid-configuration", tr.Status.Token)
	var cfg struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if code != 200 || h.Get("Content-Type") != "application/json" || !strings.HasPrefix(h.Get("Cache-Control"), "public, max-age=") {
		t.Fatalf("openid-configuration: %d %v %s", code, h, b)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Issuer != apiserver.DefaultServiceAccountIssuer || cfg.JWKSURI != s.URL()+"/openid/v1/jwks" || !slices.Equal(cfg.Algs, []string{"ES256"}) {
		t.Errorf("openid-configuration: %s", b)
	}
	code, h, b = get("/openid/v1/jwks", tr.Status.Token)
	if code != 200 || h.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("jwks: %d %v %s", code, h, b)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(tr.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 {
		t.Fatalf("jwks has no key %q: %s", tok.Headers[0].KeyID, b)
	}
	var claims jwt.Claims
	if err := tok.Claims(keys[0].Key, &claims); err != nil {
		t.Fatalf("token signature not verified by the JWKS: %v", err)
	}
	if claims.Subject != "system:serviceaccount:default:robot" || claims.Issuer != cfg.Issuer {
		t.Errorf("claims: %+v", claims)
	}
	// bob (no grant for these paths) is forbidden.
	if code, _, b := get("/openid/v1/jwks", bobIdentityToken); code != http.StatusForbidden {
		t.Errorf("bob jwks: %d %s", code, b)
	}
}

// TestServiceAccountSigningKeyPersists: the generated key is 0600 in the
// data dir and reused by a restarted server, so its tokens stay valid.
func TestServiceAccountSigningKeyPersists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, dir)
	admin := kubernetes.NewForConfigOrDie(restConfig(t, s))
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, apiserver.ServiceAccountKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode())
	}
	s.Stop()
	s = startServer(t, dir)
	if _, err := whoami(t, s, tr.Status.Token); err != nil {
		t.Errorf("token after restart: %v", err)
	}
}

func pointerTo[T any](v T) *T { return &v }

// TestServiceAccountTokenFlags: a signing key file (RSA here) replaces
// the generated key; another issuer and audience; the maximum expiration
// shortens longer requests with kube's warning.
func TestServiceAccountTokenFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.ServiceAccountSigningKeyFile = keyFile
		o.ServiceAccountIssuers = []string{"https://issuer.example"}
		o.APIAudiences = []string{"https://api.example"}
		o.ServiceAccountMaxTokenExpiration = time.Hour
	})
	cfg := restConfig(t, s)
	w := &warnings{}
	cfg.WarningHandler = w
	admin := kubernetes.NewForConfigOrDie(cfg)
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "robot", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: pointerTo[int64](7200)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *tr.Spec.ExpirationSeconds != 3600 || !slices.Equal(tr.Spec.Audiences, []string{"https://api.example"}) {
		t.Errorf("spec: %+v", tr.Spec)
	}
	if !slices.Contains(w.msgs, "requested expiration of 7200 seconds shortened to 3600 seconds") {
		t.Errorf("warnings: %q", w.msgs)
	}
	tok, err := jwt.ParseSigned(tr.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	var claims jwt.Claims
	if err := tok.Claims(&key.PublicKey, &claims); err != nil || tok.Headers[0].Algorithm != "RS256" {
		t.Fatalf("token not signed by the key file: %v %+v", err, tok.Headers)
	}
	if claims.Issuer != "https://issuer.example" {
		t.Errorf("iss %q", claims.Issuer)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", apiserver.ServiceAccountKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key was generated beside the key file: %v", err)
	}
	if _, err := whoami(t, s, tr.Status.Token); err != nil {
		t.Errorf("whoami: %v", err)
	}
}
