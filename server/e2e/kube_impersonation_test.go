package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

// impersonationStep is one request of the impersonation script: who sends
// it (the admin or alice), which Impersonate-* headers it carries, and
// what it asks.
type impersonationStep struct {
	name         string
	alice        bool
	headers      [][2]string
	method, path string
	body         string
}

// impersonationScript acts as others (kubectl --as, --as-group,
// --as-uid, client-go's Impersonate config) on a server: who the server
// then takes the requester for (a SelfSubjectReview), what that user may
// do, and who may impersonate whom (RBAC's "impersonate" verb).
func impersonationScript(sfx string) (setup [][2]string, steps []impersonationStep) {
	const ssr = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	const review = `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	role := "lw-imp-" + sfx
	setup = [][2]string{
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"` + role + `"},
		  "rules":[{"apiGroups":[""],"resources":["users"],"verbs":["impersonate"],"resourceNames":["bob"]},
		           {"apiGroups":[""],"resources":["serviceaccounts"],"verbs":["impersonate"],"resourceNames":["sa1"]},
		           {"apiGroups":["authentication.k8s.io"],"resources":["userextras/scopes"],"verbs":["impersonate"]}]}`},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"` + role + `"},
		  "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + role + `"},
		  "subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"` + kubeapiserver.UserName + `"}]}`},
	}
	as := func(kv ...string) [][2]string {
		var h [][2]string
		for i := 0; i < len(kv); i += 2 {
			h = append(h, [2]string{kv[i], kv[i+1]})
		}
		return h
	}
	cms := "/api/v1/namespaces/default/configmaps"
	steps = []impersonationStep{
		{"user", false, as("Impersonate-User", "bob"), "POST", ssr, review},
		{"user and groups", false, as("Impersonate-User", "bob", "Impersonate-Group", "dev", "Impersonate-Group", "ops"), "POST", ssr, review},
		{"service account", false, as("Impersonate-User", "system:serviceaccount:ns1:sa1"), "POST", ssr, review},
		{"service account and a group", false, as("Impersonate-User", "system:serviceaccount:ns1:sa1", "Impersonate-Group", "dev"), "POST", ssr, review},
		{"uid and extra", false, as("Impersonate-User", "bob", "Impersonate-Uid", "u-1", "Impersonate-Extra-Scopes", "a", "Impersonate-Extra-Scopes", "b"), "POST", ssr, review},
		{"escaped extra key", false, as("Impersonate-User", "bob", "Impersonate-Extra-Example.com%2fKey", "v"), "POST", ssr, review},
		{"anonymous", false, as("Impersonate-User", "system:anonymous"), "POST", ssr, review},
		{"unauthenticated group", false, as("Impersonate-User", "bob", "Impersonate-Group", "system:unauthenticated"), "POST", ssr, review},
		{"authenticated group", false, as("Impersonate-User", "bob", "Impersonate-Group", "system:authenticated"), "POST", ssr, review},
		{"group without user", false, as("Impersonate-Group", "dev"), "POST", ssr, review},
		{"uid without user", false, as("Impersonate-Uid", "u-1"), "POST", ssr, review},
		{"extra without user", false, as("Impersonate-Extra-Scopes", "a"), "POST", ssr, review},
		{"impersonated user's rights", false, as("Impersonate-User", "bob"), "GET", cms, ""},
		{"impersonated group's rights", false, as("Impersonate-User", "bob", "Impersonate-Group", "system:masters"), "GET", cms + "?limit=1", ""},
		{"impersonated user on a public path", false, as("Impersonate-User", "bob"), "GET", "/version", ""},
		{"alice as bob", true, as("Impersonate-User", "bob"), "POST", ssr, review},
		{"alice as carol", true, as("Impersonate-User", "carol"), "POST", ssr, review},
		{"alice as bob in a group", true, as("Impersonate-User", "bob", "Impersonate-Group", "dev"), "POST", ssr, review},
		{"alice as the service account", true, as("Impersonate-User", "system:serviceaccount:ns1:sa1"), "POST", ssr, review},
		{"alice as another service account", true, as("Impersonate-User", "system:serviceaccount:ns1:sa2"), "POST", ssr, review},
		{"alice as bob with extra", true, as("Impersonate-User", "bob", "Impersonate-Extra-Scopes", "x"), "POST", ssr, review},
		{"alice as bob with a uid", true, as("Impersonate-User", "bob", "Impersonate-Uid", "u-1"), "POST", ssr, review},
		{"alice as bob, bob's rights", true, as("Impersonate-User", "bob"), "GET", cms, ""},
		{"alice as bob on a public path", true, as("Impersonate-User", "bob"), "GET", "/healthz", ""},
		{"alice as carol on a public path", true, as("Impersonate-User", "carol"), "GET", "/healthz", ""},
		// The last unboundSteps run first, before alice may impersonate.
		{"alice, unbound, as bob", true, as("Impersonate-User", "bob"), "POST", ssr, review},
		{"alice, unbound, as bob, listing", true, as("Impersonate-User", "bob"), "GET", cms, ""},
		{"alice, unbound, as a service account", true, as("Impersonate-User", "system:serviceaccount:ns1:sa1"), "GET", cms, ""},
		{"alice, unbound, as bob in a group", true, as("Impersonate-User", "bob", "Impersonate-Group", "dev"), "GET", "/version", ""},
	}
	return setup, steps
}

// unboundSteps is how many of the script's steps, at its end, run before
// the setup.
const unboundSteps = 4

// runImpersonationScript runs the script against x and returns, for each
// step, its name, its code and either the Status message or who the review
// says the requester is.
func runImpersonationScript(t *testing.T, x *rbacTarget, sfx string) []string {
	t.Helper()
	setup, steps := impersonationScript(sfx)
	// Before alice may impersonate anyone.
	var unbound []string
	for _, s := range steps[len(steps)-unboundSteps:] {
		unbound = append(unbound, s.name+": "+x.impersonate(t, s))
	}
	steps = steps[:len(steps)-unboundSteps]
	for _, s := range setup {
		if r, _ := x.do(t, x.admin, "POST", s[0], s[1]); r.Code != http.StatusCreated {
			t.Fatalf("%s: setup %s: %d %s", x.name, s[0], r.Code, r.Message)
		}
	}
	// RBAC's informers see the binding a moment after it is written.
	deadline := time.Now().Add(30 * time.Second)
	for x.impersonate(t, steps[15]) != "201 user=bob groups=[system:authenticated]" {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the binding never took effect: %s", x.name, x.impersonate(t, steps[15]))
		}
		time.Sleep(50 * time.Millisecond) // polling for an asynchronous condition
	}
	var out []string
	for _, s := range steps {
		out = append(out, s.name+": "+x.impersonate(t, s))
	}
	return append(out, unbound...)
}

// impersonate sends step s to x and says what came back.
func (x *rbacTarget) impersonate(t *testing.T, s impersonationStep) string {
	t.Helper()
	var body io.Reader
	if s.body != "" {
		body = strings.NewReader(s.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), s.method, x.url+s.path, body)
	if err != nil {
		t.Fatal(err)
	}
	token := x.admin
	if s.alice {
		token = x.alice
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if s.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range s.headers {
		req.Header.Add(h[0], h[1])
	}
	resp, err := x.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Kind, Message, Reason string
		Status                struct {
			UserInfo struct {
				Username, UID string
				Groups        []string
				Extra         map[string][]string
			}
		}
	}
	_ = json.Unmarshal(b, &m)
	switch {
	case m.Kind == "Status":
		return fmt.Sprintf("%d %s %q", resp.StatusCode, m.Reason, m.Message)
	case m.Kind == "SelfSubjectReview":
		u := m.Status.UserInfo
		line := fmt.Sprintf("%d user=%s groups=%v", resp.StatusCode, u.Username, u.Groups)
		if u.UID != "" {
			line += " uid=" + u.UID
		}
		if len(u.Extra) > 0 {
			line += fmt.Sprintf(" extra=%v", u.Extra)
		}
		return line
	}
	return fmt.Sprint(resp.StatusCode)
}

// TestKubeImpersonationSideBySide runs the impersonation script against a
// real kube-apiserver and against serve, with the same users (the admin,
// and alice, who may impersonate bob, the service account ns1/sa1 and the
// "scopes" extra, nothing else), and requires the same answers; without
// the binary, the answers kube-apiserver v1.37.2 gave.
func TestKubeImpersonationSideBySide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ks *kubeapiserver.Server
	_, err := kubeapiserver.Binary()
	if err == nil {
		ks = kubeServer(t)
	}
	userToken := "alice-token-" + fmt.Sprint(time.Now().UnixNano())
	if ks != nil {
		userToken = ks.UserToken
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(userToken+","+kubeapiserver.UserName+","+kubeapiserver.UserUID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ours := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) { o.TokenAuthFile = tokens })
	sfx := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	ox := newRBACTarget(t, "ours", ours.URL(), ours.Credentials().CAPEM, ours.Credentials().AdminToken, userToken)
	got := runImpersonationScript(t, ox, sfx)
	want := kubeImpersonationLog
	if ks == nil {
		t.Logf("no kube-apiserver (%v): comparing with its answers on record", err)
	} else {
		kx := newRBACTarget(t, "kube", ks.URL, ks.Creds.CAPEM, ks.Creds.AdminToken, ks.UserToken)
		t.Cleanup(func() {
			for _, p := range []string{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/lw-imp-" + sfx, "/apis/rbac.authorization.k8s.io/v1/clusterroles/lw-imp-" + sfx} {
				req, _ := http.NewRequest(http.MethodDelete, kx.url+p, nil)
				req.Header.Set("Authorization", "Bearer "+kx.admin)
				if resp, err := kx.hc.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		})
		want = runImpersonationScript(t, kx, sfx)
	}
	compareLogs(t, got, want)
}

// kubeImpersonationLog is the script's answers from kube-apiserver v1.37.2.
var kubeImpersonationLog = []string{
	`user: 201 user=bob groups=[system:authenticated]`,
	`user and groups: 201 user=bob groups=[dev ops system:authenticated]`,
	`service account: 201 user=system:serviceaccount:ns1:sa1 groups=[system:serviceaccounts system:serviceaccounts:ns1 system:authenticated]`,
	`service account and a group: 201 user=system:serviceaccount:ns1:sa1 groups=[dev system:authenticated]`,
	`uid and extra: 201 user=bob groups=[system:authenticated] uid=u-1 extra=map[scopes:[a b]]`,
	`escaped extra key: 201 user=bob groups=[system:authenticated] extra=map[example.com/key:[v]]`,
	`anonymous: 403 Forbidden "selfsubjectreviews.authentication.k8s.io is forbidden: User \"system:anonymous\" cannot create resource \"selfsubjectreviews\" in API group \"authentication.k8s.io\" at the cluster scope"`,
	`unauthenticated group: 403 Forbidden "selfsubjectreviews.authentication.k8s.io is forbidden: User \"bob\" cannot create resource \"selfsubjectreviews\" in API group \"authentication.k8s.io\" at the cluster scope"`,
	`authenticated group: 201 user=bob groups=[system:authenticated]`,
	`group without user: 400 BadRequest "requested &user.DefaultInfo{Name:\"\", UID:\"\", Groups:[]string{\"dev\"}, Extra:map[string][]string(nil)} without impersonating a user name"`,
	`uid without user: 400 BadRequest "requested &user.DefaultInfo{Name:\"\", UID:\"u-1\", Groups:[]string(nil), Extra:map[string][]string(nil)} without impersonating a user name"`,
	`extra without user: 400 BadRequest "requested &user.DefaultInfo{Name:\"\", UID:\"\", Groups:[]string(nil), Extra:map[string][]string{\"scopes\":[]string{\"a\"}}} without impersonating a user name"`,
	`impersonated user's rights: 403 Forbidden "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""`,
	`impersonated group's rights: 200`,
	`impersonated user on a public path: 200`,
	`alice as bob: 201 user=bob groups=[system:authenticated]`,
	`alice as carol: 403 Forbidden "users \"carol\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"`,
	`alice as bob in a group: 403 Forbidden "groups \"dev\" is forbidden: User \"alice\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope"`,
	`alice as the service account: 201 user=system:serviceaccount:ns1:sa1 groups=[system:serviceaccounts system:serviceaccounts:ns1 system:authenticated]`,
	`alice as another service account: 403 Forbidden "serviceaccounts \"sa2\" is forbidden: User \"alice\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"ns1\""`,
	`alice as bob with extra: 201 user=bob groups=[system:authenticated] extra=map[scopes:[x]]`,
	`alice as bob with a uid: 403 Forbidden "uids.authentication.k8s.io \"u-1\" is forbidden: User \"alice\" cannot impersonate resource \"uids\" in API group \"authentication.k8s.io\" at the cluster scope"`,
	`alice as bob, bob's rights: 403 Forbidden "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""`,
	`alice as bob on a public path: 200`,
	`alice as carol on a public path: 403 Forbidden "users \"carol\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"`,
	`alice, unbound, as bob: 403 Forbidden "selfsubjectreviews.authentication.k8s.io is forbidden: User \"alice\" cannot impersonate-on:user-info:create resource \"selfsubjectreviews\" in API group \"authentication.k8s.io\" at the cluster scope"`,
	`alice, unbound, as bob, listing: 403 Forbidden "configmaps is forbidden: User \"alice\" cannot impersonate-on:user-info:list resource \"configmaps\" in API group \"\" in the namespace \"default\""`,
	`alice, unbound, as a service account: 403 Forbidden "configmaps is forbidden: User \"alice\" cannot impersonate-on:serviceaccount:list resource \"configmaps\" in API group \"\" in the namespace \"default\""`,
	`alice, unbound, as bob in a group: 403 Forbidden "forbidden: User \"alice\" cannot impersonate-on:user-info:get path \"/version\""`,
}

// TestKubeCertUserSameAsOurs: a user authenticated by a client
// certificate (both admin kubeconfigs present one) reads itself back from
// a SelfSubjectReview with kube's extra: the credential id, "X509SHA256="
// and the hex SHA-256 of the certificate it presented.
func TestKubeCertUserSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, _ := sideBySide(t)
	const ssr = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	const review = `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	extra := func(c *rawClient) string {
		code, m := c.do("POST", ssr, jsonCT, review)
		if code != http.StatusCreated {
			t.Fatalf("self subject review: %d %v", code, m)
		}
		status, _ := m["status"].(map[string]any)
		info, _ := status["userInfo"].(map[string]any)
		ex, _ := info["extra"].(map[string]any)
		ids, _ := ex["authentication.kubernetes.io/credential-id"].([]any)
		if len(ids) != 1 {
			return fmt.Sprintf("extra %v", info["extra"])
		}
		id, _ := ids[0].(string)
		hexSum, ok := strings.CutPrefix(id, "X509SHA256=")
		if !ok || len(hexSum) != 64 {
			return "credential id " + id
		}
		return "X509SHA256=<64 hex digits>"
	}
	if k, o := extra(kube), extra(ours); k != o {
		t.Errorf("certificate user's credential id:\n kube:  %s\n serve: %s", k, o)
	}
}
