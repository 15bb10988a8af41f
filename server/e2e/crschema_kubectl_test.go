package e2e

import (
	"strings"
	"testing"
)

// TestKubectlCustomResourceSchema: kubectl creates a CRD with a schema,
// and objects that break its rules are refused with kube's messages;
// valid ones are pruned and defaulted, and kubectl get prints the CRD's
// printer columns (a JSONPath filter among them).
func TestKubectlCustomResourceSchema(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	kubectl(t, s, thingCRD(thingSchema), "create", "-f", "-")
	kubectl(t, s, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/things."+schemaGroup)

	for _, tc := range []struct{ spec, want string }{
		{`{"name":"abc","replicas":11,"maxReplicas":20}`, `spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`},
		{`{"name":"ABC"}`, `spec.name: Invalid value: "ABC": spec.name in body should match '^[a-z]+$'`},
		{`{"mode":"slow"}`, `spec.name: Required value`},
		{`{"name":"abc","mode":"medium"}`, `spec.mode: Unsupported value: "medium": supported values: "fast", "slow"`},
		{`{"name":"abc","tags":["a","a"]}`, `spec.tags[1]: Duplicate value: "a"`},
		{`{"name":"abc","minReplicas":6}`, `spec: Invalid value: minReplicas must not exceed maxReplicas`},
		{`{"name":"forbidden"}`, `the name forbidden is reserved`},
	} {
		out, err := kubectlErr(t, s, thing("x", tc.spec), "create", "--validate=false", "-f", "-")
		if err == nil || !strings.Contains(out, `The Thing "x" is invalid`) || !strings.Contains(out, tc.want) {
			t.Errorf("kubectl create %s: %v\n%s\nwant %q", tc.spec, err, out, tc.want)
		}
	}
	out, err := kubectlErr(t, s, thing("x", `{"name":"abc","bogus":1}`), "create", "--validate=false", "-f", "-", "--dry-run=server", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "thing."+schemaGroup+"/x" {
		t.Fatalf("dry run with an unknown field: %v %s", err, out)
	}
	kubectl(t, s, thing("f", `{"name":"full","bogus":1,"ports":[{"name":"http","port":80}]}`), "create", "--validate=false", "-f", "-")
	if out := kubectl(t, s, "", "get", "thing", "f", "-o", "jsonpath={.spec.mode}/{.spec.replicas}/{.spec.bogus}"); out != "fast/1/" {
		t.Fatalf("stored: %q (want defaults, no unknown field)", out)
	}
	out = kubectl(t, s, "", "get", "things")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME NAME REPLICAS HTTP AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "f full 1 80 ") {
		t.Fatalf("kubectl get things:\n%s", out)
	}
	out, err = kubectlErr(t, s, "", "get", "things.v1beta1."+schemaGroup)
	if err != nil || !strings.Contains(out, "Warning: "+schemaGroup+"/v1beta1 Thing is deprecated; use "+schemaGroup+"/v1 Thing") {
		t.Fatalf("deprecated version: %v\n%s", err, out)
	}
}
