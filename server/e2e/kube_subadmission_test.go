package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestKubeSubresourceAdmission: admission sees the subresources whose
// body is not the object — CONNECT on pods/exec with its PodExecOptions,
// CREATE on pods/eviction with the Eviction — as kube's connect and
// create handlers send them, so a ValidatingAdmissionPolicy denies the
// same requests on both servers with the same Status.
func TestKubeSubresourceAdmission(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	const vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	const vapb = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
	name := "sub-" + ns
	policy := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"` + name + `"},
	 "spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[
	   {"apiGroups":[""],"apiVersions":["v1"],"operations":["CONNECT"],"resources":["pods/exec"]},
	   {"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["pods/eviction"]}]},
	  "validations":[{"expression":"request.subResource == 'exec' ? !object.command.exists(c, c == 'forbidden') : object.metadata.name != 'protected'",
	   "message":"not this one"}]}}`
	binding := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"` + name + `"},
	 "spec":{"policyName":"` + name + `","validationActions":["Deny"],"matchResources":{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"` + ns + `"}}}}}`
	pods := "/api/v1/namespaces/" + ns + "/pods"
	pod := func(n string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + n + `"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	}
	ev := func(n string) string {
		return `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + n + `"}}`
	}
	for i, c := range []*rawClient{kube, ours} {
		t.Cleanup(func() {
			c.do("DELETE", vapb+"/"+name, "", "")
			c.do("DELETE", vap+"/"+name, "", "")
		})
		for _, w := range [][2]string{{vap, policy}, {vapb, binding}, {pods, pod("protected")}, {pods, pod("other")}} {
			if code, m := c.do("POST", w[0], jsonCT, w[1]); code != http.StatusCreated {
				t.Fatalf("POST %s: %d %v", w[0], code, m)
			}
		}
		// The policy takes effect once the server's admission has seen
		// it: wait for the first denial.
		deadline := time.Now().Add(30 * time.Second)
		for a := c.raw("POST", pods+"/protected/exec?command=forbidden", "", ""); !strings.Contains(string(a.body), "denied request"); a = c.raw("POST", pods+"/protected/exec?command=forbidden", "", "") {
			if time.Now().After(deadline) {
				t.Fatalf("server %d: the policy never denied exec: %s", i, statusView(a))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	steps := []struct{ name, method, path, ctype, body string }{
		{"exec denied", "POST", pods + "/protected/exec?command=forbidden", "", ""},
		{"exec admitted (then no host)", "POST", pods + "/protected/exec?command=ls", "", ""},
		{"exec GET denied", "GET", pods + "/protected/exec?command=ls&command=forbidden", "", ""},
		{"attach not matched", "POST", pods + "/protected/attach?stdout=true", "", ""},
		{"eviction denied", "POST", pods + "/protected/eviction", jsonCT, ev("protected")},
		{"eviction dry run denied", "POST", pods + "/protected/eviction?dryRun=All", jsonCT, ev("protected")},
		{"eviction admitted", "POST", pods + "/other/eviction", jsonCT, ev("other")},
		{"evicted pod is gone", "GET", pods + "/other", "", ""},
		{"protected pod is there", "GET", pods + "/protected", "", ""},
	}
	for _, st := range steps {
		k, o := kube.raw(st.method, st.path, st.ctype, st.body), ours.raw(st.method, st.path, st.ctype, st.body)
		if kv, ov := statusView(k), statusView(o); kv != ov {
			t.Errorf("%s (%s %s):\n kube      %s\n listwatch %s", st.name, st.method, st.path, kv, ov)
		}
	}
}
