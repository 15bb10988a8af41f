package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/go-jose/go-jose.v2/jwt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	api "k8s.io/kubernetes/pkg/apis/core"
	kubesa "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
)

const testIssuer = "https://kubernetes.default.svc"

// memStore is a storage.Interface of which only Get works, over a map
// of JSON values.
type memStore struct {
	storage.Interface
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Get(_ context.Context, key string) (storage.KV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok {
		return storage.KV{}, storage.ErrNotFound
	}
	return storage.KV{Key: key, Value: v, Revision: 1}, nil
}

func (s *memStore) put(t testing.TB, key string, obj any) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = b
}

func (s *memStore) del(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// saFixture is service account default/robot and pod default/p of it.
type saFixture struct {
	store  *memStore
	key    *ecdsa.PrivateKey
	gen    kubesa.TokenGenerator
	authn  ServiceAccountTokens
	sa     api.ServiceAccount
	pod    api.Pod
	podKey string
}

func newSAFixture(t testing.TB) *saFixture {
	t.Helper()
	f := &saFixture{store: &memStore{m: map[string][]byte{}}}
	var err error
	if f.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if f.gen, err = kubesa.JWTTokenGenerator(testIssuer, f.key); err != nil {
		t.Fatal(err)
	}
	if f.authn, err = NewServiceAccountTokens([]string{testIssuer}, []any{f.key.Public()}, []string{testIssuer}, ServiceAccountGetter{Store: f.store}); err != nil {
		t.Fatal(err)
	}
	f.sa = api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "default", UID: "sa-uid"}}
	f.pod = api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "pod-uid"}, Spec: api.PodSpec{ServiceAccountName: "robot"}}
	f.podKey = "/registry/pods/default/p"
	f.store.put(t, "/registry/serviceaccounts/default/robot", corev1.ServiceAccount{ObjectMeta: f.sa.ObjectMeta})
	f.store.put(t, f.podKey, corev1.Pod{ObjectMeta: f.pod.ObjectMeta, Spec: corev1.PodSpec{ServiceAccountName: "robot"}})
	return f
}

// token issues a token as TokenRequest does, for auds, bound to pod if
// set; edit may change the public claims first.
func (f *saFixture) token(t testing.TB, gen kubesa.TokenGenerator, pod *api.Pod, auds []string, edit func(*jwt.Claims)) string {
	t.Helper()
	sc, pc, err := kubesa.Claims(f.sa, pod, nil, nil, nil, nil, 3600, 0, auds, nil)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(sc)
	}
	tok, err := gen.GenerateToken(context.Background(), sc, pc)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (f *saFixture) authenticate(token string) (string, error) {
	r := httptest.NewRequest("GET", "/api", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	u, ok, err := f.authn.Authenticate(r)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", nil
	}
	return fmt.Sprintf("%s %s %v %v", u.Name, u.UID, u.Groups, u.Extra["authentication.kubernetes.io/pod-name"]), nil
}

// TestServiceAccountTokens: kube's authenticator over the store accepts
// a valid token as the service account, and refuses expired tokens, other
// audiences, other signatures, and tokens whose service account or bound
// pod is gone or was recreated; tokens of another issuer are left to the
// next authenticator.
func TestServiceAccountTokens(t *testing.T) {
	f := newSAFixture(t)
	api := []string{testIssuer}
	unbound := f.token(t, f.gen, nil, api, nil)
	bound := f.token(t, f.gen, &f.pod, api, nil)

	got, err := f.authenticate(unbound)
	if want := "system:serviceaccount:default:robot sa-uid [system:serviceaccounts system:serviceaccounts:default] []"; err != nil || got != want {
		t.Errorf("valid token: %q, %v; want %q", got, err, want)
	}
	got, err = f.authenticate(bound)
	if want := "system:serviceaccount:default:robot sa-uid [system:serviceaccounts system:serviceaccounts:default] [p]"; err != nil || got != want {
		t.Errorf("bound token: %q, %v; want %q", got, err, want)
	}

	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherGen, _ := kubesa.JWTTokenGenerator(testIssuer, otherKey)
	otherIssuer, _ := kubesa.JWTTokenGenerator("https://elsewhere", f.key)
	past := func(c *jwt.Claims) {
		c.IssuedAt = jwt.NewNumericDate(time.Now().Add(-2 * time.Hour))
		c.NotBefore = c.IssuedAt
		c.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Hour))
	}
	for _, tc := range []struct {
		name, token, err string
	}{
		{"expired", f.token(t, f.gen, nil, api, past), "service account token has expired"},
		{"other audience", f.token(t, f.gen, nil, []string{"vault"}, nil), "token audiences"},
		{"other signature", f.token(t, otherGen, nil, api, nil), "invalid signature, no keys found"},
		{"tampered", unbound[:len(unbound)-4] + "AAAA", "go-jose/go-jose: error in cryptographic primitive"},
	} {
		got, err := f.authenticate(tc.token)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q, %v; want error %q", tc.name, got, err, tc.err)
		}
	}
	if got, err := f.authenticate(f.token(t, otherIssuer, nil, api, nil)); got != "" || err != nil {
		t.Errorf("other issuer: %q, %v; want no credential", got, err)
	}

	// The bound pod recreated (new uid), then deleted.
	f.store.put(t, f.podKey, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "pod-uid-2"}})
	if _, err := f.authenticate(bound); err == nil || !strings.Contains(err.Error(), "pod UID (pod-uid-2) does not match") {
		t.Errorf("recreated pod: %v", err)
	}
	f.store.del(f.podKey)
	if _, err := f.authenticate(bound); err == nil || !strings.Contains(err.Error(), "service account token has been invalidated") {
		t.Errorf("deleted pod: %v", err)
	}
	if _, err := f.authenticate(unbound); err != nil {
		t.Errorf("unbound token after pod delete: %v", err)
	}
	// The service account being deleted (a deletionTimestamp in the
	// past), recreated, deleted.
	gone := metav1.NewTime(time.Now().Add(-time.Minute))
	f.store.put(t, "/registry/serviceaccounts/default/robot", corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "default", UID: "sa-uid", DeletionTimestamp: &gone}})
	if _, err := f.authenticate(unbound); err == nil || !strings.Contains(err.Error(), "has been deleted") {
		t.Errorf("service account being deleted: %v", err)
	}
	f.store.put(t, "/registry/serviceaccounts/default/robot", corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "default", UID: "sa-uid-2"}})
	if _, err := f.authenticate(unbound); err == nil || !strings.Contains(err.Error(), "service account UID (sa-uid-2) does not match claim (sa-uid)") {
		t.Errorf("recreated service account: %v", err)
	}
	f.store.del("/registry/serviceaccounts/default/robot")
	if _, err := f.authenticate(unbound); err == nil || !strings.Contains(err.Error(), `serviceaccounts "robot" not found`) {
		t.Errorf("deleted service account: %v", err)
	}
}

// TestKubeTokenAuthenticatorServiceAccounts: TokenReview's authenticator
// checks a service-account token's audiences against the review's, and
// falls back to the other tokens.
func TestKubeTokenAuthenticatorServiceAccounts(t *testing.T) {
	f := newSAFixture(t)
	tf, err := ParseTokenFile(strings.NewReader("static,alice,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	k := KubeTokenAuthenticator{Authenticator: tf, APIAudiences: []string{testIssuer}, ServiceAccounts: f.authn.Token}
	vault := f.token(t, f.gen, nil, []string{"vault"}, nil)
	review := func(token string, auds ...string) (string, []string, error) {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		if auds != nil {
			r = r.WithContext(authenticator.WithAudiences(r.Context(), auds))
		}
		resp, ok, err := k.AuthenticateRequest(r)
		if !ok {
			return "", nil, err
		}
		return resp.User.GetName(), resp.Audiences, err
	}
	if u, auds, err := review(vault, "vault"); u != "system:serviceaccount:default:robot" || !slices.Equal(auds, []string{"vault"}) || err != nil {
		t.Errorf("vault token for vault: %q %v %v", u, auds, err)
	}
	if u, _, err := review(vault); u != "" || err == nil {
		t.Errorf("vault token for the API: %q %v", u, err)
	}
	if u, _, err := review("static"); u != "alice" || err != nil {
		t.Errorf("static token: %q %v", u, err)
	}
	if u, _, err := review("nope"); u != "" || err == nil || err.Error() != "invalid bearer token" {
		t.Errorf("unknown token: %q %v", u, err)
	}
}

// TestServiceAccountIssuerDiscoveryAuthorizer: kube's bootstrap binding,
// get on the discovery paths for system:serviceaccounts only.
func TestServiceAccountIssuerDiscoveryAuthorizer(t *testing.T) {
	authz := NewAuthorizer(nil)
	for _, tc := range []struct {
		groups []string
		verb   string
		path   string
		want   Decision
	}{
		{[]string{GroupServiceAccounts, GroupAuthenticated}, "get", "/openid/v1/jwks", DecisionAllow},
		{[]string{GroupServiceAccounts, GroupAuthenticated}, "get", "/.well-known/openid-configuration", DecisionAllow},
		{[]string{GroupServiceAccounts, GroupAuthenticated}, "get", "/.well-known/openid-configuration/", DecisionAllow},
		{[]string{GroupServiceAccounts, GroupAuthenticated}, "post", "/openid/v1/jwks", DecisionNoOpinion},
		{[]string{GroupServiceAccounts, GroupAuthenticated}, "get", "/openid/v1/jwks/x", DecisionNoOpinion},
		{[]string{GroupAuthenticated}, "get", "/openid/v1/jwks", DecisionNoOpinion},
		{[]string{GroupUnauthenticated}, "get", "/openid/v1/jwks", DecisionNoOpinion},
	} {
		u := &request.User{Name: "u", Groups: tc.groups}
		d, _, _ := authz.Authorize(context.Background(), u, &request.Info{Verb: tc.verb, Path: tc.path})
		if d != tc.want {
			t.Errorf("%v %s %s: %v, want %v", tc.groups, tc.verb, tc.path, d, tc.want)
		}
	}
}
