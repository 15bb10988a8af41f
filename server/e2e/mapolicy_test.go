package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

// MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA and on by
// default in kube 1.36+): the same script against this server and a real
// kube-apiserver must give the same objects and the same errors.

const (
	mapPlural = "mapols"
	mapKind   = "Mapol"
)

func mapObject(kind, name, ns string, json ...string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"` +
		strings.Join(json, "") + `}`
}

// mapPolicies are the policies and bindings of the script, for the
// configmaps and the custom resources labelled test=name:
//   - apply: ApplyConfiguration adding the label applied=<param's
//     data.label>, with a ConfigMap param and a matchCondition skipping
//     objects named "skip";
//   - patch: JSONPatch adding the annotation patched=yes;
//   - fail and ignore: a JSONPatch that cannot apply, failurePolicy Fail
//     and Ignore, for the objects labelled what=fail, what=ignore;
//   - the apply policy bound a second time, to a param that does not
//     exist (parameterNotFoundAction Deny), for what=noparam.
func mapPolicies(ns, name string) [][2]string {
	rules := `"matchConstraints":{"resourceRules":[` +
		`{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["configmaps"]},` +
		`{"apiGroups":["` + crGroup + `"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["` + mapPlural + `"]}]}`
	policy := func(suffix, spec string) [2]string {
		return [2]string{"mutatingadmissionpolicies", mapObject("MutatingAdmissionPolicy", name+"-"+suffix, "", `},"spec":{`+rules+`,`+spec+`}`)}
	}
	binding := func(suffix, policy, spec string) [2]string {
		return [2]string{"mutatingadmissionpolicybindings", mapObject("MutatingAdmissionPolicyBinding", name+"-"+suffix, "",
			`},"spec":{"policyName":"`+name+`-`+policy+`",`+spec+`}`)}
	}
	sel := func(what string) string {
		if what == "" {
			return `"matchResources":{"objectSelector":{"matchLabels":{"test":"` + name + `"}}}`
		}
		return `"matchResources":{"objectSelector":{"matchLabels":{"test":"` + name + `","what":"` + what + `"}}}`
	}
	failing := `"mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: 'remove', path: '/metadata/nothing'}]"}}]`
	return [][2]string{
		policy("apply", `"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},`+
			`"matchConditions":[{"name":"not-skipped","expression":"object.metadata.name != 'skip'"}],`+
			`"failurePolicy":"Fail","reinvocationPolicy":"Never",`+
			`"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {'applied': params.data.label}}}"}}]`),
		binding("apply", "apply", `"paramRef":{"name":"params","namespace":"`+ns+`","parameterNotFoundAction":"Deny"},`+sel("")),
		binding("noparam", "apply", `"paramRef":{"name":"missing","namespace":"`+ns+`","parameterNotFoundAction":"Deny"},`+sel("noparam")),
		policy("patch", `"failurePolicy":"Fail","reinvocationPolicy":"IfNeeded",`+
			`"mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'patched': 'yes'}}]"}}]`),
		binding("patch", "patch", sel("")),
		policy("fail", `"failurePolicy":"Fail","reinvocationPolicy":"Never",`+failing),
		binding("fail", "fail", sel("fail")),
		policy("ignore", `"failurePolicy":"Ignore","reinvocationPolicy":"Never",`+failing),
		binding("ignore", "ignore", sel("ignore")),
	}
}

// mapScript runs the script against the server c talks to and returns its
// log: each step's code and Status, or the labels and annotations of the
// object written.
func mapScript(t *testing.T, c *rawClient, ns, name string) []string {
	const admreg = "/apis/admissionregistration.k8s.io/v1/"
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	t.Cleanup(func() {
		for _, p := range mapPolicies(ns, name) {
			var m struct {
				Metadata struct{ Name string }
			}
			_ = json.Unmarshal([]byte(p[1]), &m)
			c.do("DELETE", admreg+p[0]+"/"+m.Metadata.Name, "", "")
		}
		c.do("DELETE", crds+"/"+mapPlural+"."+crGroup, "", "")
		c.do("DELETE", "/api/v1/namespaces/"+ns, "", "")
	})
	c.step("namespace", "POST", "/api/v1/namespaces", jsonCT, `{"metadata":{"name":"`+ns+`"}}`, "metadata.name")
	c.step("crd", "POST", crds, jsonCT, crCRD(mapPlural, mapKind, ""), "metadata.name")
	c.waitServed(mapPlural)
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	crs := "/apis/" + crGroup + "/v1/namespaces/" + ns + "/" + mapPlural
	c.step("param", "POST", cms, jsonCT, `{"metadata":{"name":"params"},"data":{"label":"from-param"}}`, "data")
	for _, p := range mapPolicies(ns, name) {
		c.step("create "+p[0], "POST", admreg+p[0], jsonCT, p[1], "metadata.name")
	}
	cm := func(obj, what string) string {
		l := `"test":"` + name + `"`
		if what != "" {
			l += `,"what":"` + what + `"`
		}
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + obj + `","labels":{` + l + `}},"data":{"k":"v"}}`
	}
	cr := func(obj, what string) string {
		l := `"test":"` + name + `"`
		if what != "" {
			l += `,"what":"` + what + `"`
		}
		return `{"apiVersion":"` + crGroup + `/v1","kind":"` + mapKind + `","metadata":{"name":"` + obj + `","labels":{` + l + `}},"spec":{"k":"v"}}`
	}
	kinds := []struct {
		name, coll string
		body       func(obj, what string) string
	}{{"configmap", cms, cm}, {"custom resource", crs, cr}}

	// The policies take effect when the informers have them, and for a
	// custom resource when its OpenAPI document has been read (kube: up
	// to a few seconds after the CRD).
	for _, k := range kinds {
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, m := c.do("POST", k.coll+"?dryRun=All", jsonCT, k.body("probe", ""))
			fc, _ := c.do("POST", k.coll+"?dryRun=All", jsonCT, k.body("probe", "fail"))
			nc, _ := c.do("POST", k.coll+"?dryRun=All", jsonCT, k.body("probe", "noparam"))
			if code == http.StatusCreated && jsonAt(m, "metadata.labels.applied") == `"from-param"` &&
				jsonAt(m, "metadata.annotations.patched") == `"yes"` && fc >= 400 && nc >= 400 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: policies never took effect: %d %v (fail %d, noparam %d)\n%s", k.name, code, m["metadata"], fc, nc, strings.Join(c.log, "\n"))
			}
			time.Sleep(100 * time.Millisecond) // polling for an asynchronous condition
		}
	}
	for _, k := range kinds {
		fields := []string{"metadata.labels", "metadata.annotations"}
		c.step(k.name+" create", "POST", k.coll, jsonCT, k.body("plain", ""), fields...)
		c.step(k.name+" matchCondition false", "POST", k.coll, jsonCT, k.body("skip", ""), fields...)
		c.step(k.name+" failurePolicy Fail", "POST", k.coll, jsonCT, k.body("fail", "fail"), fields...)
		c.step(k.name+" failurePolicy Ignore", "POST", k.coll, jsonCT, k.body("ignored", "ignore"), fields...)
		c.step(k.name+" param not found", "POST", k.coll, jsonCT, k.body("noparam", "noparam"), fields...)
		c.step(k.name+" update", "PATCH", k.coll+"/plain", mergePatch, `{"metadata":{"labels":{"applied":"changed","extra":"1"},"annotations":null}}`, fields...)
		c.step(k.name+" not selected", "POST", k.coll, jsonCT, strings.Replace(k.body("other", ""), `"test":"`+name+`"`, `"test":"no"`, 1), fields...)
	}
	// A changed param changes the mutation.
	c.step("param changed", "PATCH", cms+"/params", mergePatch, `{"data":{"label":"second"}}`, "data")
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, m := c.do("POST", cms+"?dryRun=All", jsonCT, cm("probe", ""))
		if jsonAt(m, "metadata.labels.applied") == `"second"` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("changed param never took effect: %v", m["metadata"])
		}
		time.Sleep(100 * time.Millisecond) // polling for an asynchronous condition
	}
	c.step("after param change", "POST", cms, jsonCT, cm("later", ""), "metadata.labels")
	return c.log
}

// TestKubeMutatingAdmissionPolicy compares the script's log with a real
// kube-apiserver's; without the binary, with the answers kube gives.
func TestKubeMutatingAdmissionPolicy(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	got := mapScript(t, newRawClient(t, restConfig(t, s)), "map-test", "map-test")
	if _, err := kubeapiserver.Binary(); err != nil {
		t.Logf("no kube-apiserver (%v): checking this server's answers alone", err)
		for _, want := range []string{
			`configmap create: 201 metadata.labels={"applied":"from-param","test":"map-test"} metadata.annotations={"patched":"yes"}`,
			`custom resource create: 201 metadata.labels={"applied":"from-param","test":"map-test"} metadata.annotations={"patched":"yes"}`,
			`configmap matchCondition false: 201 metadata.labels={"test":"map-test"} metadata.annotations={"patched":"yes"}`,
			`after param change: 201 metadata.labels={"applied":"second","test":"map-test"}`,
		} {
			if !contains(got, want) {
				t.Errorf("missing %s in\n%s", want, strings.Join(got, "\n"))
			}
		}
		return
	}
	want := mapScript(t, newRawClient(t, kubeRESTConfig(t)), "map-test", "map-test")
	compareLogs(t, got, want)
}

func contains(log []string, line string) bool {
	for _, l := range log {
		if l == line {
			return true
		}
	}
	return false
}

func compareLogs(t *testing.T, got, want []string) {
	t.Helper()
	for i := 0; i < len(got) || i < len(want); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("step %d:\n ours: %s\n kube: %s", i, g, w)
		} else {
			t.Logf("same: %s", g)
		}
	}
}

// kubeRESTConfig is the real kube-apiserver's admin client configuration.
func kubeRESTConfig(t *testing.T) *rest.Config {
	return adminRESTConfig(kubeServer(t))
}

// adminRESTConfig is the admin's rest.Config for kube-apiserver s.
func adminRESTConfig(s *kubeapiserver.Server) *rest.Config {
	cfg := s.AdminConfig()
	return &rest.Config{Host: cfg.Host, BearerToken: cfg.BearerToken, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}
}

// ownKubeRESTConfig starts a kube-apiserver for t alone, stopped when t
// ends, and returns the admin's rest.Config for it: for a script that
// makes fixed names (its namespace), which the package's shared
// kube-apiserver, with no namespace controller to finish a deletion,
// would still hold when the test runs again (-count).
func ownKubeRESTConfig(t *testing.T) *rest.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	k, err := kubeapiserver.Start(ctx, kubeapiserver.Options{})
	if err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("kube-apiserver: %v", err)
		}
	})
	return adminRESTConfig(k)
}

// paramAuthzScript: alice may create policies and bindings but not read
// configmaps (only secrets); a policy naming ConfigMap as its paramKind,
// and a binding with a paramRef to configmaps, are then refused (422,
// spec.paramKind / spec.paramRef Forbidden), as kube's strategies
// authorize them; with Secret as the paramKind they are allowed (the kind
// resolved to its resource, secrets).
func paramAuthzScript(t *testing.T, admin, alice *rawClient, sfx string) []string {
	const admreg = "/apis/admissionregistration.k8s.io/v1/"
	const rbac = "/apis/rbac.authorization.k8s.io/v1/"
	role := "lw-map-authz-" + sfx
	var created []string
	t.Cleanup(func() {
		for _, p := range created {
			admin.do("DELETE", p, "", "")
		}
	})
	var log []string
	mk := func(c *rawClient, step, coll, name, body string) {
		m := c.step(step, "POST", admreg+coll, jsonCT, body, "metadata.name")
		log = append(log, c.log[len(c.log)-1])
		if m["kind"] != "Status" {
			created = append(created, admreg+coll+"/"+name)
		}
	}
	admin.step("role", "POST", rbac+"clusterroles", jsonCT, `{"metadata":{"name":"`+role+`"},"rules":[{"apiGroups":["admissionregistration.k8s.io"],"resources":["*"],"verbs":["*"]},{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list"]}]}`, "metadata.name")
	created = append(created, rbac+"clusterroles/"+role)
	admin.step("binding", "POST", rbac+"clusterrolebindings", jsonCT, `{"metadata":{"name":"`+role+`"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"`+role+`"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]}`, "metadata.name")
	created = append(created, rbac+"clusterrolebindings/"+role)
	match := `"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},`
	mut := match + `"reinvocationPolicy":"Never","mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: 'test', path: '/kind', value: 'ConfigMap'}]"}}]`
	// RBAC takes effect through informers: wait for alice's create.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, m := alice.do("POST", admreg+"mutatingadmissionpolicies?dryRun=All", jsonCT, mapObject("MutatingAdmissionPolicy", "probe-"+sfx, "",
			`},"spec":{`+mut+`}`))
		if code == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice never allowed: %d %v", code, m["message"])
		}
		time.Sleep(50 * time.Millisecond) // polling for an asynchronous condition
	}
	paramKind := `"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},`
	for _, c := range []struct {
		who  *rawClient
		name string
	}{{alice, "alice"}, {admin, "admin"}} {
		p := "lw-map-" + c.name + "-" + sfx
		mk(c.who, c.name+" MAP with paramKind", "mutatingadmissionpolicies", p,
			mapObject("MutatingAdmissionPolicy", p, "", `},"spec":{`+paramKind+mut+`}`))
		mk(c.who, c.name+" MAP without paramKind", "mutatingadmissionpolicies", p+"-plain",
			mapObject("MutatingAdmissionPolicy", p+"-plain", "", `},"spec":{`+mut+`}`))
		mk(c.who, c.name+" MAP with paramKind Secret", "mutatingadmissionpolicies", p+"-secret",
			mapObject("MutatingAdmissionPolicy", p+"-secret", "", `},"spec":{"paramKind":{"apiVersion":"v1","kind":"Secret"},`+mut+`}`))
		mk(c.who, c.name+" VAP with paramKind", "validatingadmissionpolicies", p,
			mapObject("ValidatingAdmissionPolicy", p, "", `},"spec":{`+paramKind+match+`"validations":[{"expression":"true"}]}`))
	}
	// Bindings with a paramRef to the admin's policies (which exist, with
	// a paramKind) and to one that does not exist.
	adminPolicy := "lw-map-admin-" + sfx
	for _, c := range []struct {
		who  *rawClient
		name string
	}{{alice, "alice"}, {admin, "admin"}} {
		b := "lw-mapb-" + c.name + "-" + sfx
		ref := `"paramRef":{"name":"p","namespace":"default","parameterNotFoundAction":"Deny"}`
		mk(c.who, c.name+" MAP binding with paramRef", "mutatingadmissionpolicybindings", b,
			mapObject("MutatingAdmissionPolicyBinding", b, "", `},"spec":{"policyName":"`+adminPolicy+`",`+ref+`}`))
		mk(c.who, c.name+" MAP binding with paramRef, list", "mutatingadmissionpolicybindings", b+"-list",
			mapObject("MutatingAdmissionPolicyBinding", b+"-list", "", `},"spec":{"policyName":"`+adminPolicy+`","paramRef":{"selector":{},"parameterNotFoundAction":"Allow"}}`))
		mk(c.who, c.name+" MAP binding, policy missing", "mutatingadmissionpolicybindings", b+"-nopolicy",
			mapObject("MutatingAdmissionPolicyBinding", b+"-nopolicy", "", `},"spec":{"policyName":"nope-`+sfx+`",`+ref+`}`))
		mk(c.who, c.name+" MAP binding with paramRef to a Secret", "mutatingadmissionpolicybindings", b+"-secret",
			mapObject("MutatingAdmissionPolicyBinding", b+"-secret", "", `},"spec":{"policyName":"lw-map-alice-`+sfx+`-secret",`+ref+`}`))
		mk(c.who, c.name+" MAP binding without paramRef", "mutatingadmissionpolicybindings", b+"-plain",
			mapObject("MutatingAdmissionPolicyBinding", b+"-plain", "", `},"spec":{"policyName":"`+adminPolicy+`"}`))
		mk(c.who, c.name+" VAP binding with paramRef", "validatingadmissionpolicybindings", b,
			mapObject("ValidatingAdmissionPolicyBinding", b, "", `},"spec":{"policyName":"`+adminPolicy+`","validationActions":["Deny"],`+ref+`}`))
	}
	return log
}

// TestKubeMutatingAdmissionPolicyParamAuthz: creating a policy with a
// paramKind, or a binding with a paramRef, needs get (or list) on the
// param's resource, with kube's answers.
func TestKubeMutatingAdmissionPolicyParamAuthz(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(ks.UserToken+","+kubeapiserver.UserName+","+kubeapiserver.UserUID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ours := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) { o.TokenAuthFile = tokens })
	sfx := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	run := func(cfg *rest.Config) []string {
		acfg := rest.AnonymousClientConfig(cfg)
		acfg.BearerToken = ks.UserToken
		return paramAuthzScript(t, newRawClient(t, cfg), newRawClient(t, acfg), sfx)
	}
	got := run(restConfig(t, ours))
	want := run(kubeRESTConfig(t))
	compareLogs(t, got, want)
	refused := 0
	for _, l := range want {
		if strings.Contains(l, ": 422 Invalid") {
			refused++
		}
	}
	if refused < 4 {
		t.Errorf("kube refused %d creates, want at least 4:\n%s", refused, strings.Join(want, "\n"))
	}
}

// mapWebhookOrder binds, on the server cs talks to, two
// MutatingAdmissionPolicies (reinvocationPolicy IfNeeded and Never) that
// record whether the mutating webhook /patch had already added its label,
// and returns the labels of a configmap created through both and those
// the webhook was sent.
func mapWebhookOrder(t *testing.T, cs kubernetes.Interface, h *hookServer, ns, name string) []string {
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	adm := cs.AdmissionregistrationV1()
	none := admregv1.SideEffectClassNone
	fail := admregv1.Fail
	never := admregv1.NeverReinvocationPolicy
	if _, err := adm.MutatingWebhookConfigurations().Create(ctx, &admregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admregv1.MutatingWebhook{{
			Name: "patch.example.com", ClientConfig: admregv1.WebhookClientConfig{URL: h.url("/patch"), CABundle: h.ca},
			Rules: cmRule(admregv1.Create), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			FailurePolicy: &fail, ReinvocationPolicy: &never, ObjectSelector: labelSel("test", name),
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adm.MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	for _, p := range []struct {
		suffix string
		policy admregv1.ReinvocationPolicyType
	}{{"ifneeded", admregv1.IfNeededReinvocationPolicy}, {"never", admregv1.NeverReinvocationPolicy}} {
		pn := name + "-" + p.suffix
		if _, err := adm.MutatingAdmissionPolicies().Create(ctx, &admregv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: pn},
			Spec: admregv1.MutatingAdmissionPolicySpec{
				MatchConstraints: &admregv1.MatchResources{ResourceRules: []admregv1.NamedRuleWithOperations{{
					RuleWithOperations: cmRule(admregv1.Create)[0],
				}}},
				FailurePolicy:      &fail,
				ReinvocationPolicy: p.policy,
				Mutations: []admregv1.Mutation{{PatchType: admregv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admregv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {'saw-webhook-` + p.suffix + `': 'mutated' in object.metadata.labels ? 'yes' : 'no'}}}`,
				}}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = adm.MutatingAdmissionPolicies().Delete(context.Background(), pn, metav1.DeleteOptions{}) })
		if _, err := adm.MutatingAdmissionPolicyBindings().Create(ctx, &admregv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: pn},
			Spec: admregv1.MutatingAdmissionPolicyBindingSpec{PolicyName: pn,
				MatchResources: &admregv1.MatchResources{ObjectSelector: labelSel("test", name)}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = adm.MutatingAdmissionPolicyBindings().Delete(context.Background(), pn, metav1.DeleteOptions{})
		})
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	cm := func(n string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"test": name}}}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := cms.Create(ctx, cm("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && got.Labels["mutated"] == "yes" && got.Labels["saw-webhook-ifneeded"] != "" && got.Labels["saw-webhook-never"] != "", nil
	})
	if err != nil {
		t.Fatalf("webhook and policies never took effect: %v", err)
	}
	got, err := cms.Create(ctx, cm("both"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := h.requests("/patch")
	var sent struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(reqs[len(reqs)-1].Object.Raw, &sent)
	return []string{
		fmt.Sprintf("stored labels: %v", got.Labels),
		fmt.Sprintf("webhook was sent labels: %v", sent.Metadata.Labels),
	}
}

// TestKubeMutatingAdmissionPolicyWebhookOrder: the policies run before
// the mutating webhooks, and a policy with reinvocationPolicy IfNeeded
// runs again after a webhook changed the object, as in kube-apiserver.
func TestKubeMutatingAdmissionPolicyWebhookOrder(t *testing.T) {
	t.Parallel()
	h := newHookServer(t)
	s := startServer(t, t.TempDir())
	got := mapWebhookOrder(t, kubernetes.NewForConfigOrDie(restConfig(t, s)), h, "map-order", "map-order")
	want := []string{
		"stored labels: map[mutated:yes saw-webhook-ifneeded:yes saw-webhook-never:no test:map-order]",
		"webhook was sent labels: map[saw-webhook-ifneeded:no saw-webhook-never:no test:map-order]",
	}
	if _, err := kubeapiserver.Binary(); err == nil {
		want = mapWebhookOrder(t, kubeClientset(t), h, "map-order", "map-order")
	}
	compareLogs(t, got, want)
}
