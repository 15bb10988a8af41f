package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

// rbacTarget is one server the RBAC script runs against: its URL, CA and
// the admin's and alice's bearer tokens.
type rbacTarget struct {
	name         string
	url          string
	admin, alice string
	hc           *http.Client
}

func newRBACTarget(t *testing.T, name, url string, caPEM []byte, admin, alice string) *rbacTarget {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("bad CA")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &rbacTarget{name: name, url: url, admin: admin, alice: alice, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// rbacResult is what is compared: the code, and the Status message of a
// failure (or the named fields of a review's status).
type rbacResult struct {
	Code    int
	Message string
}

func (x *rbacTarget) do(t *testing.T, token, method, path, body string) (rbacResult, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, x.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	switch method {
	case http.MethodPatch:
		req.Header.Set("Content-Type", "application/merge-patch+json")
	default:
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := x.hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", x.name, method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := rbacResult{Code: resp.StatusCode}
	if resp.StatusCode >= 300 {
		var st struct{ Message string }
		_ = json.Unmarshal(b, &st)
		r.Message = st.Message
	}
	return r, b
}

// rbacStep is one request of the script.
type rbacStep struct {
	name, method, path, body string
}

// rbacFixture is what the admin creates before alice's script: names are
// suffixed so that the shared kube-apiserver can run it again.
func rbacFixture(ns, sfx string) []rbacStep {
	rbac := "/apis/rbac.authorization.k8s.io/v1"
	role := func(name, rules string) string {
		return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"` + name + `"},"rules":` + rules + `}`
	}
	binding := func(kind, name, roleKind, roleName string) string {
		return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},` +
			`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"` + roleKind + `","name":"` + roleName + `"},` +
			`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]}`
	}
	return []rbacStep{
		{"namespace", "POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`},
		{"secret s1", "POST", "/api/v1/namespaces/" + ns + "/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"}}`},
		{"role reader", "POST", rbac + "/namespaces/" + ns + "/roles", role("reader", `[
			{"apiGroups":[""],"resources":["pods","pods/status"],"verbs":["get","list"]},
			{"apiGroups":[""],"resources":["secrets"],"resourceNames":["s1"],"verbs":["get"]},
			{"apiGroups":[""],"resources":["configmaps"],"verbs":["*"]},
			{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles","rolebindings"],"verbs":["create","update","patch","get"]},
			{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"resourceNames":["system:aggregate-to-view"],"verbs":["bind"]}]`)},
		{"role escalator", "POST", rbac + "/namespaces/" + ns + "/roles", role("escalator", `[
			{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"],"resourceNames":["escalated"],"verbs":["escalate"]}]`)},
		{"clusterrole", "POST", rbac + "/clusterroles", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"lw-rbac-` + sfx + `"},"rules":[
			{"apiGroups":[""],"resources":["namespaces"],"verbs":["get","list"]},
			{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"verbs":["create"]},
			{"nonResourceURLs":["/metrics","/healthz/*"],"verbs":["get"]}]}`},
		{"rolebinding reader", "POST", rbac + "/namespaces/" + ns + "/rolebindings", binding("RoleBinding", "reader", "Role", "reader")},
		{"rolebinding escalator", "POST", rbac + "/namespaces/" + ns + "/rolebindings", binding("RoleBinding", "escalator", "Role", "escalator")},
		{"clusterrolebinding", "POST", rbac + "/clusterrolebindings", binding("ClusterRoleBinding", "lw-rbac-"+sfx, "ClusterRole", "lw-rbac-"+sfx)},
		{"rolebinding dangling", "POST", rbac + "/namespaces/" + ns + "/rolebindings", binding("RoleBinding", "dangling", "Role", "missing")},
	}
}

// rbacSynced are reviews alice's grants answer "allowed" to once the
// authorizer has seen every binding of the fixture.
func rbacSynced(ns string) []string {
	return []string{
		`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"namespace":"` + ns + `","verb":"list","resource":"pods"}}}`,
		`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"namespace":"` + ns + `","verb":"escalate","group":"rbac.authorization.k8s.io","resource":"roles","name":"escalated"}}}`,
		`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"verb":"list","resource":"namespaces"}}}`,
	}
}

// rbacScript is what alice does: ~30 requests across verbs, resources,
// subresources, resourceNames, nonResourceURLs, API groups, wildcards,
// and writes of RBAC objects that escalate or not.
func rbacScript(ns, sfx string) []rbacStep {
	api := "/api/v1/namespaces/" + ns
	rbac := "/apis/rbac.authorization.k8s.io/v1"
	role := func(name, rules string) string {
		return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"` + name + `"},"rules":` + rules + `}`
	}
	rb := func(name, roleKind, roleName, subject string) string {
		return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + name + `"},` +
			`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"` + roleKind + `","name":"` + roleName + `"},` +
			`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"` + subject + `"}]}`
	}
	ssar := func(attrs string) string {
		return `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":` + attrs + `}`
	}
	return []rbacStep{
		{"list pods", "GET", api + "/pods", ""},
		{"get missing pod", "GET", api + "/pods/nope", ""},
		{"get pod status", "GET", api + "/pods/nope/status", ""},
		{"list pods elsewhere", "GET", "/api/v1/namespaces/default/pods", ""},
		{"list pods everywhere", "GET", "/api/v1/pods", ""},
		{"create pod", "POST", api + "/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`},
		{"delete pod", "DELETE", api + "/pods/nope", ""},
		{"pod ephemeral containers", "GET", api + "/pods/nope/ephemeralcontainers", ""},
		{"get named secret", "GET", api + "/secrets/s1", ""},
		{"get other secret", "GET", api + "/secrets/s2", ""},
		{"list secrets", "GET", api + "/secrets", ""},
		{"create configmap", "POST", api + "/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`},
		{"patch configmap", "PATCH", api + "/configmaps/cm", `{"data":{"a":"b"}}`},
		{"delete configmap", "DELETE", api + "/configmaps/cm", ""},
		{"configmaps elsewhere", "GET", "/api/v1/namespaces/default/configmaps", ""},
		{"list namespaces", "GET", "/api/v1/namespaces", ""},
		{"get namespace", "GET", "/api/v1/namespaces/" + ns, ""},
		{"delete namespace", "DELETE", "/api/v1/namespaces/" + ns, ""},
		{"deployments", "GET", "/apis/apps/v1/namespaces/" + ns + "/deployments", ""},
		{"metrics", "GET", "/metrics", ""},
		{"healthz check", "GET", "/healthz/ping", ""},
		{"logs path", "GET", "/logs", ""},
		{"discovery", "GET", "/apis", ""},
		{"role held", "POST", rbac + "/namespaces/" + ns + "/roles", role("held", `[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]`)},
		{"role escalating", "POST", rbac + "/namespaces/" + ns + "/roles", role("esc", `[{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list"]}]`)},
		{"role escalate verb", "POST", rbac + "/namespaces/" + ns + "/roles", role("escalated", `[{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list"]}]`)},
		{"role update escalating", "PUT", rbac + "/namespaces/" + ns + "/roles/held", role("held", `[{"apiGroups":["apps"],"resources":["deployments"],"verbs":["get"]}]`)},
		{"role patch escalating", "PATCH", rbac + "/namespaces/" + ns + "/roles/held", `{"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`},
		{"role patch held", "PATCH", rbac + "/namespaces/" + ns + "/roles/held", `{"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["list"]}]}`},
		{"binding held role", "POST", rbac + "/namespaces/" + ns + "/rolebindings", rb("b-held", "Role", "held", "bob")},
		{"binding cluster-admin", "POST", rbac + "/namespaces/" + ns + "/rolebindings", rb("b-admin", "ClusterRole", "cluster-admin", "alice")},
		{"binding bind verb", "POST", rbac + "/namespaces/" + ns + "/rolebindings", rb("b-view", "ClusterRole", "system:aggregate-to-view", "bob")},
		{"binding no bind verb", "POST", rbac + "/namespaces/" + ns + "/rolebindings", rb("b-edit", "ClusterRole", "system:aggregate-to-edit", "bob")},
		{"binding missing role", "POST", rbac + "/namespaces/" + ns + "/rolebindings", rb("b-missing", "Role", "nope", "bob")},
		{"binding missing clusterrole", "POST", rbac + "/namespaces/" + ns + "/rolebindings", rb("b-missing-c", "ClusterRole", "nope", "bob")},
		{"access dangling binding", "GET", api + "/services", ""},
		{"clusterrole held", "POST", rbac + "/clusterroles", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"lw-rbac-held-` + sfx + `"},"rules":[{"apiGroups":[""],"resources":["namespaces"],"verbs":["get"]}]}`},
		{"clusterrole aggregation", "POST", rbac + "/clusterroles", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"lw-rbac-agg-` + sfx + `"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"x":"y"}}]}}`},
		{"clusterrolebinding", "POST", rbac + "/clusterrolebindings", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"x"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[]}`},
		{"ssar allowed", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", ssar(`{"resourceAttributes":{"namespace":"` + ns + `","verb":"get","resource":"secrets","name":"s1"}}`)},
		{"ssar denied", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", ssar(`{"resourceAttributes":{"namespace":"` + ns + `","verb":"get","resource":"secrets","name":"s2"}}`)},
		{"ssar non-resource", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", ssar(`{"nonResourceAttributes":{"verb":"get","path":"/healthz/etcd"}}`)},
		{"sar forbidden", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", `{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"user":"alice","resourceAttributes":{"verb":"get","resource":"pods"}}}`},
	}
}

// reviewStatus is the part of an access review's answer compared.
func reviewStatus(b []byte) string {
	var r struct {
		Status struct {
			Allowed bool   `json:"allowed"`
			Denied  bool   `json:"denied"`
			Reason  string `json:"reason"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "undecodable: " + err.Error()
	}
	return fmt.Sprintf("allowed=%v denied=%v reason=%q", r.Status.Allowed, r.Status.Denied, r.Status.Reason)
}

// rulesReview is alice's SelfSubjectRulesReview in ns, as sorted lines.
func rulesReview(t *testing.T, x *rbacTarget, ns string) []string {
	t.Helper()
	r, b := x.do(t, x.alice, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
		`{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1","spec":{"namespace":"`+ns+`"}}`)
	if r.Code != http.StatusCreated {
		t.Fatalf("%s: rules review: %+v", x.name, r)
	}
	var rr struct {
		Status struct {
			ResourceRules    []json.RawMessage `json:"resourceRules"`
			NonResourceRules []json.RawMessage `json:"nonResourceRules"`
			Incomplete       bool              `json:"incomplete"`
			EvaluationError  string            `json:"evaluationError"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &rr); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range append(rr.Status.ResourceRules, rr.Status.NonResourceRules...) {
		out = append(out, string(r))
	}
	slices.Sort(out)
	return append(out, fmt.Sprintf("incomplete=%v error=%q", rr.Status.Incomplete, rr.Status.EvaluationError))
}

// runRBACScript creates the fixture as admin, waits until alice's grants
// are in effect, and runs alice's script.
func runRBACScript(t *testing.T, x *rbacTarget, ns, sfx string) []rbacResult {
	t.Helper()
	for _, s := range rbacFixture(ns, sfx) {
		if r, _ := x.do(t, x.admin, s.method, s.path, s.body); r.Code >= 300 {
			t.Fatalf("%s: fixture %s: %+v", x.name, s.name, r)
		}
	}
	// The authorizer reads informers: poll alice's own reviews until every
	// binding of the fixture is in effect.
	deadline := time.Now().Add(30 * time.Second)
	for _, review := range rbacSynced(ns) {
		for {
			_, b := x.do(t, x.alice, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
			if strings.HasPrefix(reviewStatus(b), "allowed=true") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: grant not in effect: %s: %s", x.name, review, b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var out []rbacResult
	for _, s := range rbacScript(ns, sfx) {
		r, b := x.do(t, x.alice, s.method, s.path, s.body)
		if strings.Contains(s.path, "accessreviews") && r.Code == http.StatusCreated {
			r.Message = reviewStatus(b)
		}
		out = append(out, r)
	}
	return out
}

// TestKubeRBACSideBySide runs the same RBAC objects and the same ~40
// requests of alice against kube-apiserver (RBAC mode) and this server,
// and compares codes and messages, and alice's SelfSubjectRulesReview.
func TestKubeRBACSideBySide(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(ks.UserToken+","+kubeapiserver.UserName+","+kubeapiserver.UserUID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ours := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) { o.TokenAuthFile = tokens })

	sfx := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	ns := "lw-rbac-" + sfx
	kx := newRBACTarget(t, "kube", ks.URL, ks.Creds.CAPEM, ks.Creds.AdminToken, ks.UserToken)
	ox := newRBACTarget(t, "ours", ours.URL(), ours.Credentials().CAPEM, ours.Credentials().AdminToken, ks.UserToken)
	t.Cleanup(func() {
		for _, p := range []string{"/api/v1/namespaces/" + ns, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/lw-rbac-" + sfx,
			"/apis/rbac.authorization.k8s.io/v1/clusterroles/lw-rbac-" + sfx, "/apis/rbac.authorization.k8s.io/v1/clusterroles/lw-rbac-held-" + sfx} {
			req, _ := http.NewRequest(http.MethodDelete, kx.url+p, nil)
			req.Header.Set("Authorization", "Bearer "+kx.admin)
			if resp, err := kx.hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	})

	want := runRBACScript(t, kx, ns, sfx)
	got := runRBACScript(t, ox, ns, sfx)
	script := rbacScript(ns, sfx)
	for i := range script {
		if got[i] != want[i] {
			t.Errorf("%s: %s %s\n ours: %d %s\n kube: %d %s", script[i].name, script[i].method, script[i].path,
				got[i].Code, got[i].Message, want[i].Code, want[i].Message)
		}
	}
	// The script is not vacuous: alice was allowed some and refused some.
	codes := map[int]int{}
	for _, r := range want {
		codes[r.Code]++
	}
	if codes[http.StatusForbidden] < 10 || codes[http.StatusOK]+codes[http.StatusCreated] < 10 {
		t.Errorf("kube's answers: %v", codes)
	}

	wantRules, gotRules := rulesReview(t, kx, ns), rulesReview(t, ox, ns)
	if !slices.Equal(gotRules, wantRules) {
		t.Errorf("SelfSubjectRulesReview differs:\n ours: %s\n kube: %s", strings.Join(gotRules, "\n       "), strings.Join(wantRules, "\n       "))
	}
}
