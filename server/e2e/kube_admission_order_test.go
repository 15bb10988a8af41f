package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

// TestKubeMutationSeesTheWriteAsSent: mutating admission runs where
// kube-apiserver runs it, on the object as the client sent it, before the
// store's own steps. Two MutatingAdmissionPolicies, bound to the script's
// namespace:
//   - "seen" records in an annotation what it saw of the object: on a
//     create, no uid, creationTimestamp or generated name (kube's create
//     handler wipes what the client sent of them, its store sets them
//     after admission); on a /status update, the spec and labels the
//     client sent (the status strategy resets them afterwards) and the
//     resourceVersion as sent;
//   - "droprv" removes the resourceVersion of the objects labelled for it:
//     kube's store reads the resourceVersion only after mutation, so a
//     stale update becomes an unconditional one.
//
// The script's log is compared with a real kube-apiserver's, or without
// the binary with the answers kube-apiserver v1.37.2 gave (kubeOrderLog).
func TestKubeMutationSeesTheWriteAsSent(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	got := orderScript(t, newRawClient(t, restConfig(t, s)))
	if _, err := kubeapiserver.Binary(); err != nil {
		t.Logf("no kube-apiserver (%v): comparing with its answers on record", err)
		compareLogs(t, got, kubeOrderLog)
		return
	}
	compareLogs(t, got, orderScript(t, newRawClient(t, kubeRESTConfig(t))))
}

// kubeOrderLog is orderScript's log against kube-apiserver v1.37.2.
var kubeOrderLog = []string{
	`namespace: 201 metadata.name="order-test"`,
	`crd: 201 metadata.name="orderwidgets.scaletest.example.com"`,
	`create: 201 metadata.annotations={"seen":"name=a uid=none created=none rv=none extra=none"} metadata.labels={"probe":"seen"} metadata.generateName=-`,
	`create with uid and creationTimestamp: 201 metadata.annotations={"seen":"name=b uid=none created=none rv=none extra=none"} metadata.labels={"probe":"seen"} metadata.generateName=-`,
	`create with generateName: 201 metadata.annotations={"seen":"name=none uid=none created=none rv=none extra=none"} metadata.labels={"probe":"seen"} metadata.generateName="g-"`,
	`create with resourceVersion: 500 <nil> "resourceVersion should not be set on objects to be created"`,
	`update without resourceVersion: 200 metadata.annotations={"seen":"name=a uid=none created=none rv=none extra=none"} metadata.labels={"probe":"seen"} metadata.generateName=-`,
	`update with a bad resourceVersion: 500 <nil> "strconv.ParseUint: parsing \"x1\": invalid syntax"`,
	`patch: 200 metadata.annotations={"seen":"name=a uid=set created=set rv=stored extra=none"} metadata.labels={"probe":"seen"} metadata.generateName=-`,
	`create to drop the resourceVersion of: 201 data={"a":"1"}`,
	`stale update, resourceVersion dropped: 200 data={"a":"1"}`,
	`stale patch, resourceVersion dropped: 200 data={"a":"1","p":"1"}`,
	`create with resourceVersion, dropped: 201 data={"a":"1"}`,
	`dry-run create with resourceVersion, dropped: 201 data={"a":"1"} metadata.resourceVersion=-`,
	`deployment: 201 metadata.annotations={"seen":"name=d uid=none created=none rv=none extra=none replicas=1"} metadata.labels={"probe":"seen"} metadata.generateName=- spec.replicas=1`,
	`deployment status with metadata and spec: 200 metadata.annotations={"client":"y","seen":"name=d uid=none created=none rv=none extra=x replicas=5"} metadata.labels={"probe":"seen"} metadata.generateName=- spec.replicas=1 metadata.finalizers=["example.com/f"]`,
	`deployment status patch: 200 metadata.annotations={"client":"y","patched":"z","seen":"name=d uid=set created=set rv=stored extra=none replicas=7"} metadata.labels={"probe":"seen"} metadata.generateName=- spec.replicas=1`,
	`deployment after: 200 metadata.annotations={"client":"y","patched":"z","seen":"name=d uid=set created=set rv=stored extra=none replicas=7"} metadata.labels={"probe":"seen"} metadata.generateName=- spec.replicas=1 metadata.finalizers=["example.com/f"]`,
	`stale scale, resourceVersion dropped: 200 spec.replicas=3`,
	`custom resource: 201 metadata.annotations={"seen":"name=w uid=none created=none rv=none extra=none replicas=1"} metadata.labels={"probe":"seen"} metadata.generateName=-`,
	`custom resource status with metadata and spec: 200 metadata.annotations={"seen":"name=w uid=none created=none rv=none extra=none replicas=1"} metadata.labels={"probe":"seen"} metadata.generateName=- spec={"replicas":1} status={"ok":true,"seen":"name=w uid=none created=none rv=stored extra=x replicas=5"}`,
	`w managedFields: [{"apiVersion":"scaletest.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:probe":{}}},"f:spec":{".":{},"f:replicas":{}}},"manager":"Go-http-client","operation":"Update"},{"apiVersion":"scaletest.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{".":{},"f:ok":{}}},"manager":"Go-http-client","operation":"Update","subresource":"status"}]`,
	`a managedFields: [{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{".":{},"f:probe":{}}}},"manager":"Go-http-client","operation":"Update"}]`,
	`d managedFields: [{"apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}},"manager":"Go-http-client","operation":"Update","subresource":"scale"},{"apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:probe":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}},"manager":"Go-http-client","operation":"Update"},{"apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{"f:client":{},"f:patched":{}},"f:finalizers":{".":{},"v:\"example.com/f\"":{}}}},"manager":"Go-http-client","operation":"Update","subresource":"status"}]`,
}

// orderScript runs TestKubeMutationSeesTheWriteAsSent's steps against the
// server c talks to and returns its log.
func orderScript(t *testing.T, c *rawClient) []string {
	const ns = "order-test"
	const admreg = "/apis/admissionregistration.k8s.io/v1/"
	rules := `"matchConstraints":{"resourceRules":[` +
		`{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["configmaps"]},` +
		`{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["deployments","deployments/status","deployments/scale"]},` +
		`{"apiGroups":["` + crGroup + `"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["orderwidgets","orderwidgets/status"]}]}`
	seen := `"name=" + (has(object.metadata.name) ? object.metadata.name : "none") +
		" uid=" + (has(object.metadata.uid) ? "set" : "none") +
		" created=" + (has(object.metadata.creationTimestamp) ? "set" : "none") +
		" rv=" + (!has(object.metadata.resourceVersion) ? "none" : oldObject == null ? object.metadata.resourceVersion :
		  object.metadata.resourceVersion == oldObject.metadata.resourceVersion ? "stored" : object.metadata.resourceVersion) +
		" extra=" + (has(object.metadata.labels) && "extra" in object.metadata.labels ? object.metadata.labels["extra"] : "none") +
		(object.kind != "ConfigMap" ? " replicas=" + string(object.spec.replicas) : "")`
	seen = strings.ReplaceAll(strings.ReplaceAll(strings.Join(strings.Fields(seen), " "), `\`, `\\`), `"`, `\"`)
	policy := func(suffix, spec string) [2]string {
		return [2]string{"mutatingadmissionpolicies", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":"` +
			ns + `-` + suffix + `"},"spec":{` + rules + `,"failurePolicy":"Fail","reinvocationPolicy":"Never",` + spec + `}}`}
	}
	binding := func(suffix string) [2]string {
		return [2]string{"mutatingadmissionpolicybindings", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":"` +
			ns + `-` + suffix + `"},"spec":{"policyName":"` + ns + `-` + suffix + `","matchResources":{` +
			`"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"` + ns + `"}},` +
			`"objectSelector":{"matchLabels":{"probe":"` + suffix + `"}}}}}`}
	}
	objects := [][2]string{
		policy("seen", `"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{annotations: {'seen': `+seen+`}}}"}}]`),
		binding("seen"),
		policy("droprv", `"matchConditions":[{"name":"has-rv","expression":"has(object.metadata.resourceVersion)"}],`+
			`"mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: 'remove', path: '/metadata/resourceVersion'}]"}}]`),
		binding("droprv"),
		// A Scale has no labels to select: this binding of droprv selects
		// the writes to deployments/scale.
		[2]string{"mutatingadmissionpolicybindings", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":"` +
			ns + `-droprv-scale"},"spec":{"policyName":"` + ns + `-droprv","matchResources":{` +
			`"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"` + ns + `"}},` +
			`"resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["UPDATE"],"resources":["deployments/scale"]}]}}}`},
		// A custom resource's status strategy keeps only the status
		// written: what the policy saw goes there.
		policy("status", `"matchConditions":[{"name":"status","expression":"request.subResource == 'status' && has(object.status)"}],`+
			`"mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: 'add', path: '/status/seen', value: `+seen+`}]"}}]`),
		binding("status"),
	}
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	deps := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	cm := func(n, probe, meta string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + n + `","labels":{"probe":"` + probe + `"}` + meta + `},"data":{"a":"1"}}`
	}
	dep := func(labels string, replicas string, rest string) string {
		return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{` + labels + `}` + rest + `},` +
			`"spec":{"replicas":` + replicas + `,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`
	}
	crs := "/apis/" + crGroup + "/v1/namespaces/" + ns + "/orderwidgets"
	widget := func(labels, replicas, rest string) string {
		return `{"apiVersion":"` + crGroup + `/v1","kind":"OrderWidget","metadata":{"name":"w","labels":{` + labels + `}},"spec":{"replicas":` + replicas + `}` + rest + `}`
	}
	fields := []string{"metadata.annotations", "metadata.labels", "metadata.generateName"}
	t.Cleanup(func() {
		c.do("PATCH", deps+"/d", mergePatch, `{"metadata":{"finalizers":null}}`)
		for _, o := range objects {
			c.do("DELETE", admreg+o[0]+"/"+nameOf(o[1], ns), "", "")
		}
		c.do("DELETE", "/api/v1/namespaces/"+ns, "", "")
		c.do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/orderwidgets."+crGroup, "", "")
	})
	c.step("namespace", "POST", "/api/v1/namespaces", jsonCT, `{"metadata":{"name":"`+ns+`"}}`, "metadata.name")
	c.step("crd", "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", jsonCT, crCRD("orderwidgets", "OrderWidget", `"subresources":{"status":{}},`), "metadata.name")
	c.waitOK(crs)
	for _, o := range objects {
		if code, m := c.do("POST", admreg+o[0], jsonCT, o[1]); code != http.StatusCreated {
			t.Fatalf("%s: %d %v", o[0], code, m)
		}
	}
	// The policies act once the server's admission has them.
	if code, m := c.do("POST", cms, jsonCT, cm("probe", "droprv", "")); code != http.StatusCreated {
		t.Fatalf("probe: %d %v", code, m)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, m := c.do("POST", cms+"?dryRun=All", jsonCT, cm("probe-seen", "seen", ""))
		code, d := c.do("PUT", cms+"/probe?dryRun=All", jsonCT, cm("probe", "droprv", `,"resourceVersion":"1"`))
		_, w := c.do("POST", crs+"?dryRun=All", jsonCT, widget(`"probe":"seen"`, "1", ""))
		if jsonAt(m, "metadata.annotations.seen") != "-" && code == http.StatusOK && jsonAt(w, "metadata.annotations.seen") != "-" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policies never took effect: %v; %d %v", m, code, d)
		}
		time.Sleep(100 * time.Millisecond) // polling for an asynchronous condition
	}
	c.step("create", "POST", cms, jsonCT, cm("a", "seen", ""), fields...)
	c.step("create with uid and creationTimestamp", "POST", cms, jsonCT, cm("b", "seen", `,"uid":"00000000-0000-0000-0000-000000000000","creationTimestamp":"2001-01-01T00:00:00Z"`), fields...)
	c.step("create with generateName", "POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"g-","labels":{"probe":"seen"}}}`, fields...)
	c.step("create with resourceVersion", "POST", cms, jsonCT, cm("c", "seen", `,"resourceVersion":"7"`), fields...)
	c.step("update without resourceVersion", "PUT", cms+"/a", jsonCT, cm("a", "seen", ""), fields...)
	c.step("update with a bad resourceVersion", "PUT", cms+"/a", jsonCT, cm("a", "seen", `,"resourceVersion":"x1"`), fields...)
	c.step("patch", "PATCH", cms+"/a", mergePatch, `{"data":{"b":"2"}}`, fields...)
	c.step("create to drop the resourceVersion of", "POST", cms, jsonCT, cm("r", "droprv", ""), "data")
	c.step("stale update, resourceVersion dropped", "PUT", cms+"/r", jsonCT, cm("r", "droprv", `,"resourceVersion":"1"`), "data")
	c.step("stale patch, resourceVersion dropped", "PATCH", cms+"/r", mergePatch, `{"metadata":{"resourceVersion":"1"},"data":{"p":"1"}}`, "data")
	c.step("create with resourceVersion, dropped", "POST", cms, jsonCT, cm("r2", "droprv", `,"resourceVersion":"7"`), "data")
	c.step("dry-run create with resourceVersion, dropped", "POST", cms+"?dryRun=All", jsonCT, cm("r3", "droprv", `,"resourceVersion":"7"`), "data", "metadata.resourceVersion")
	c.step("deployment", "POST", deps, jsonCT, dep(`"probe":"seen"`, "1", ""), append(fields, "spec.replicas")...)
	c.step("deployment status with metadata and spec", "PUT", deps+"/d/status", jsonCT,
		dep(`"probe":"seen","extra":"x"`, "5", `,"annotations":{"client":"y"},"finalizers":["example.com/f"]`), append(fields, "spec.replicas", "metadata.finalizers")...)
	c.step("deployment status patch", "PATCH", deps+"/d/status", mergePatch,
		`{"metadata":{"labels":{"patched":"z"},"annotations":{"patched":"z"}},"spec":{"replicas":7}}`, append(fields, "spec.replicas")...)
	c.step("deployment after", "GET", deps+"/d", "", "", append(fields, "spec.replicas", "metadata.finalizers")...)
	c.step("stale scale, resourceVersion dropped", "PUT", deps+"/d/scale", jsonCT,
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d","resourceVersion":"1"},"spec":{"replicas":3}}`, "spec.replicas")
	c.step("custom resource", "POST", crs, jsonCT, widget(`"probe":"seen"`, "1", ""), fields...)
	_, w := c.do("GET", crs+"/w", "", "")
	rv := strings.Trim(jsonAt(w, "metadata.resourceVersion"), `"`)
	c.step("custom resource status with metadata and spec", "PUT", crs+"/w/status", jsonCT,
		strings.Replace(widget(`"probe":"status","extra":"x"`, "5", `,"status":{"ok":true}`), `"name":"w"`, `"name":"w","resourceVersion":"`+rv+`"`, 1),
		append(fields, "spec", "status")...)
	// The managed fields are the client's: kube records them before
	// admission, so what the policies added belongs to no manager.
	times := regexp.MustCompile(`,?"time":"[^"]*"`)
	for _, p := range []string{crs + "/w", cms + "/a", deps + "/d"} {
		_, m := c.do("GET", p, "", "")
		c.log = append(c.log, p[strings.LastIndex(p, "/")+1:]+" managedFields: "+times.ReplaceAllString(jsonAt(m, "metadata.managedFields"), ""))
	}
	return c.log
}

// nameOf is the metadata.name of the object o, which starts with prefix.
func nameOf(o, prefix string) string {
	i := strings.Index(o, `"name":"`+prefix)
	if i < 0 {
		return ""
	}
	o = o[i+len(`"name":"`):]
	return o[:strings.IndexByte(o, '"')]
}
