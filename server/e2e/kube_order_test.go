package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// orderMasks replace the values that differ between two servers by
// nature (uids, times, resourceVersion numbers, allocated addresses)
// and leave every member where it is, so two answers compare byte for
// byte.
var orderMasks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"(resourceVersion|uid|creationTimestamp|time|continue|eventTime|firstTimestamp|lastTimestamp|lastTransitionTime|lastUpdateTime|lastHeartbeatTime|startTime|deletionTimestamp|clusterIP)":"[^"]*"`), `"$1":"x"`},
	{regexp.MustCompile(`"clusterIPs":\["[^"]*"\]`), `"clusterIPs":["x"]`},
	{regexp.MustCompile(`"nodePort":[0-9]+`), `"nodePort":0`},
	// A Job's controller-uid labels and selector, an owner's uid.
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), `x`},
	{regexp.MustCompile(`"lastPhaseTransitionTime":"[^"]*"`), `"lastPhaseTransitionTime":"x"`},
}

func maskOrder(b []byte) string {
	s := strings.TrimSpace(string(b))
	for _, m := range orderMasks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}

// TestKubeObjectBytesSameAsOurs: kube-apiserver writes a built-in
// object's JSON with its typed encoder (kind, apiVersion, then metadata
// with ObjectMeta's fields in their Go order and the rest in the type's
// order) and a custom resource's as encoding/json of its map (keys in
// order at every depth, resourceVersion among them). serve's answers to
// a create, update, patch, GET, list and watch are the same bytes, but
// for values that differ by nature (uid, times, resourceVersion numbers,
// allocated addresses).
func TestKubeObjectBytesSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	gv := customResourcesSideBySide(t, ns, kube, ours)
	group := strings.Split(gv, "/")[2]
	api := "/api/v1/namespaces/" + ns
	kinds := []struct {
		what, collection, name, body, patch string
	}{
		{"configmap", api + "/configmaps", "cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"b":"1","a":"2"},"annotations":{"x":"y"},"finalizers":["example.com/f"]},"data":{"k":"v"},"binaryData":{"b":"AA=="},"immutable":false}`, `{"metadata":{"labels":{"c":"3"}}}`},
		{"pod", api + "/pods", "pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod","generateName":"p-"},"spec":{"containers":[{"name":"c","image":"busybox","ports":[{"containerPort":80}]}]}}`, `{"metadata":{"annotations":{"a":"b"}}}`},
		{"deployment", "/apis/apps/v1/namespaces/" + ns + "/deployments", "dep", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"dep"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, `{"spec":{"replicas":2}}`},
		{"service", api + "/services", "svc", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}],"selector":{"app":"x"}}}`, `{"metadata":{"labels":{"l":"v"}}}`},
		{"namespace", "/api/v1/namespaces", ns + "-x", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `-x","labels":{"z":"1"}}}`, `{"metadata":{"annotations":{"a":"b"}}}`},
		{"gizmo", gv + "/namespaces/" + ns + "/gizmos", "giz", `{"apiVersion":"` + group + `/v1","kind":"Gizmo","metadata":{"name":"giz","namespace":"` + ns + `","labels":{"b":"1"},"generateName":"g-"},"spec":{"z":1,"a":[2]}}`, `{"spec":{"m":"n"}}`},
		{"gadget", gv + "/gadgets", "gad-" + ns, `{"apiVersion":"` + group + `/v1","kind":"Gadget","metadata":{"name":"gad-` + ns + `"},"spec":{"z":1}}`, `{"metadata":{"labels":{"q":"r"}}}`},
	}
	for _, k := range kinds {
		var answers [2][]string
		for i, c := range []*rawClient{kube, ours} {
			add := func(what string, code int, b []byte) {
				answers[i] = append(answers[i], what+": "+http.StatusText(code)+" "+maskOrder(b))
			}
			code, _, b := c.send("POST", k.collection, jsonCT, "application/json", k.body)
			add("create", code, b)
			if code != http.StatusCreated {
				t.Errorf("%s: create: %d %s", k.what, code, b)
			}
			var created struct {
				Metadata struct{ ResourceVersion string }
			}
			_ = json.Unmarshal(b, &created)
			t.Cleanup(func() {
				c.send("DELETE", k.collection+"/"+k.name, "", "application/json", "")
			})
			code, _, b = c.send("GET", k.collection+"/"+k.name, "", "application/json", "")
			add("get", code, b)
			put := b
			code, _, b = c.send("PUT", k.collection+"/"+k.name, jsonCT, "application/json", string(put))
			add("update", code, b)
			code, _, b = c.send("PATCH", k.collection+"/"+k.name, "application/merge-patch+json", "application/json", k.patch)
			add("patch", code, b)
			code, _, b = c.send("GET", k.collection+"/"+k.name, "", "application/json", "")
			add("get after patch", code, b)
			list := k.collection + "?fieldSelector=metadata.name%3D" + k.name
			code, _, b = c.send("GET", list, "", "application/json", "")
			add("list", code, b)
			code, _, b = c.send("GET", list+"&watch=1&timeoutSeconds=1&resourceVersion="+created.Metadata.ResourceVersion, "", "application/json", "")
			add("watch", code, b)
		}
		for j := range answers[0] {
			if j >= len(answers[1]) || answers[0][j] != answers[1][j] {
				t.Errorf("%s:\n kube:  %s\n serve: %s", k.what, answers[0][j], answers[1][j])
			}
		}
	}
}

// answerKind is one kind of TestKubeAnswerBytesSameAsOurs: its
// collection, an object's name and body, a merge patch, and a body
// kube's validation refuses (422), "" for none.
type answerKind struct {
	what, collection, name, body, patch, invalid string
}

// volatileKinds are those whose status kube-apiserver's own controllers
// write when they come to it (a CRD's, an APIService's): their status is
// left out, and their watch events and deletion (which waits for a CRD's
// finalizer) are not compared.
var volatileKinds = map[string]bool{"customresourcedefinition": true, "apiservice": true}

// settled are the conditions kube's controllers write last on a
// volatile kind's object: the test waits for them before it compares
// the object's GET, update and patch.
var settled = map[string]string{
	"customresourcedefinition": `"type":"Established","status":"True"`,
	"apiservice":               `"type":"Available","status":"True"`,
}

// awaitBody GETs path until its body has want, for up to 30s.
func (c *rawClient) awaitBody(path, want string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, b := c.send("GET", path, "", "application/json", "")
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Errorf("%s%s: no %s after 30s: %s", c.host, path, want, b)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// volatileStatus is the status of an object kube's controllers write
// (volatileKinds): the last member of the object and of a list's
// only item.
var volatileStatus = regexp.MustCompile(`"status":\{.*\}(\}(\]\})?)$`)

// volatileManagers are a volatile kind's managedFields: kube sorts their
// entries by operation, then by their time's second, then by manager
// (sortEncodedManagedFields), so whether a patch comes in the same
// second as the controllers' status write decides which comes first, on
// kube-apiserver as on serve. (FieldsV1 holds no array.)
var volatileManagers = regexp.MustCompile(`"managedFields":\[[^\[\]]*\]`)

// TestKubeAnswerBytesSameAsOurs: the answers about built-in objects of
// more kinds than TestKubeObjectBytesSameAsOurs' (those serve stores
// without a Go type of its own among them: flow control, DRA) are kube's
// bytes, nested values included: a create, a second create's 409, a dry
// run, a GET, an update, a patch, a GET and a list as
// PartialObjectMetadata(List), a list, a watch, a 422, a dry-run delete
// and a delete (a batch/v1 Job's orphans: it stays), a GET's 404 in JSON
// and as partial metadata (kube's indented WriteRawJSON); and of a
// deployment's and a gizmo's scale, a pod's status, a gizmo as partial
// metadata (GET, list, watch, Table rows), a paged list and a
// deletecollection. 32 answers differed before (a custom resource's
// partial metadata, a Job's delete, 404s asked for as partial metadata).
func TestKubeAnswerBytesSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	gv := customResourcesSideBySide(t, ns, kube, ours)
	group := strings.Split(gv, "/")[2]
	api := "/api/v1/namespaces/" + ns
	nsd := func(g string) string { return "/apis/" + g + "/namespaces/" + ns }
	obj := func(apiVersion, kind, name, rest string) string {
		return `{"apiVersion":"` + apiVersion + `","kind":"` + kind + `","metadata":{"name":"` + name + `","labels":{"b":"1","a":"2"}}` + rest + `}`
	}
	cl := ns + "-o" // cluster-scoped objects' name
	podSpec := `{"containers":[{"name":"c","image":"busybox","ports":[{"containerPort":80}],"env":[{"name":"E","value":"v"}]}],"restartPolicy":"Never"}`
	template := `{"metadata":{"labels":{"app":"x"}},"spec":` + podSpec + `}`
	// A workload's pods restart Always.
	always := `{"metadata":{"labels":{"app":"x"}},"spec":` + strings.Replace(podSpec, `,"restartPolicy":"Never"`, "", 1) + `}`
	claimSpec := `{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"c","selectors":[{"cel":{"expression":"true"}}],"allocationMode":"ExactCount","count":1}}],"constraints":[{"requests":["r"],"matchAttribute":"example.com/a"}]}}`
	kinds := []answerKind{
		{"flowschema", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", cl, obj("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", cl, `,"spec":{"priorityLevelConfiguration":{"name":"workload-low"},"matchingPrecedence":5000,"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"User","user":{"name":"u"}},{"kind":"Group","group":{"name":"g"}},{"kind":"ServiceAccount","serviceAccount":{"namespace":"n","name":"s"}}],"resourceRules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"namespaces":["*"]}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]}]}`), `{"spec":{"matchingPrecedence":5001}}`, obj("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", cl+"-bad", `,"spec":{"priorityLevelConfiguration":{"name":""},"matchingPrecedence":0}`)},
		{"prioritylevelconfiguration", "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", cl, obj("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", cl, `,"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Queue","queuing":{"queues":8,"handSize":2,"queueLengthLimit":10}},"lendablePercent":10}}`), `{"spec":{"limited":{"nominalConcurrencyShares":6}}}`, obj("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", cl+"-bad", `,"spec":{"type":"Nope"}`)},
		{"deviceclass", "/apis/resource.k8s.io/v1/deviceclasses", cl, obj("resource.k8s.io/v1", "DeviceClass", cl, `,"spec":{"selectors":[{"cel":{"expression":"device.driver == \"x\""}}],"config":[{"opaque":{"driver":"x.example.com","parameters":{"z":1,"a":2}}}]}`), `{"metadata":{"annotations":{"p":"q"}}}`, obj("resource.k8s.io/v1", "DeviceClass", cl+"-bad", `,"spec":{"selectors":[{"cel":{"expression":""}}]}`)},
		{"resourceclaim", nsd("resource.k8s.io/v1") + "/resourceclaims", "rc", obj("resource.k8s.io/v1", "ResourceClaim", "rc", `,"spec":`+claimSpec), `{"metadata":{"annotations":{"p":"q"}}}`, obj("resource.k8s.io/v1", "ResourceClaim", "bad", `,"spec":{"devices":{"requests":[{"name":""}]}}`)},
		{"resourceclaimtemplate", nsd("resource.k8s.io/v1") + "/resourceclaimtemplates", "rct", obj("resource.k8s.io/v1", "ResourceClaimTemplate", "rct", `,"spec":{"metadata":{"labels":{"t":"1"}},"spec":`+claimSpec+`}`), `{"metadata":{"annotations":{"p":"q"}}}`, ""},
		{"resourceslice", "/apis/resource.k8s.io/v1/resourceslices", cl, obj("resource.k8s.io/v1", "ResourceSlice", cl, `,"spec":{"driver":"x.example.com","pool":{"name":"p","generation":1,"resourceSliceCount":1},"allNodes":true,"devices":[{"name":"d","attributes":{"z":{"int":1},"a":{"string":"s"}},"capacity":{"mem":{"value":"1Gi"}}}]}`), `{"metadata":{"annotations":{"p":"q"}}}`, obj("resource.k8s.io/v1", "ResourceSlice", cl+"-bad", `,"spec":{"driver":""}`)},
		{"secret", api + "/secrets", "sec", obj("v1", "Secret", "sec", `,"type":"Opaque","stringData":{"s":"t"},"data":{"d":"AA=="}`), `{"data":{"e":"AQ=="}}`, obj("v1", "Secret", "bad", `,"type":"kubernetes.io/tls"`)},
		{"serviceaccount", api + "/serviceaccounts", "sa", obj("v1", "ServiceAccount", "sa", `,"secrets":[{"name":"x"}],"imagePullSecrets":[{"name":"y"}],"automountServiceAccountToken":false`), `{"automountServiceAccountToken":true}`, ""},
		{"role", nsd("rbac.authorization.k8s.io/v1") + "/roles", "role", obj("rbac.authorization.k8s.io/v1", "Role", "role", `,"rules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods"],"resourceNames":["p"]}]`), `{"metadata":{"annotations":{"p":"q"}}}`, obj("rbac.authorization.k8s.io/v1", "Role", "bad", `,"rules":[{"verbs":[]}]`)},
		{"rolebinding", nsd("rbac.authorization.k8s.io/v1") + "/rolebindings", "rb", obj("rbac.authorization.k8s.io/v1", "RoleBinding", "rb", `,"subjects":[{"kind":"User","name":"u","apiGroup":"rbac.authorization.k8s.io"},{"kind":"ServiceAccount","name":"s","namespace":"n"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"role"}`), `{"metadata":{"annotations":{"p":"q"}}}`, ""},
		{"clusterrole", "/apis/rbac.authorization.k8s.io/v1/clusterroles", cl, obj("rbac.authorization.k8s.io/v1", "ClusterRole", cl, `,"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}],"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"z":"1"}}]}`), `{"metadata":{"annotations":{"p":"q"}}}`, ""},
		{"job", nsd("batch/v1") + "/jobs", "job", obj("batch/v1", "Job", "job", `,"spec":{"suspend":true,"template":`+template+`}`), `{"spec":{"activeDeadlineSeconds":100}}`, obj("batch/v1", "Job", "bad", `,"spec":{"template":{"spec":{"containers":[]}}}`)},
		{"cronjob", nsd("batch/v1") + "/cronjobs", "cj", obj("batch/v1", "CronJob", "cj", `,"spec":{"schedule":"*/5 * * * *","suspend":true,"jobTemplate":{"spec":{"template":`+template+`}}}`), `{"spec":{"schedule":"*/6 * * * *"}}`, obj("batch/v1", "CronJob", "bad", `,"spec":{"schedule":"nope"}`)},
		{"statefulset", nsd("apps/v1") + "/statefulsets", "sts", obj("apps/v1", "StatefulSet", "sts", `,"spec":{"replicas":0,"serviceName":"s","selector":{"matchLabels":{"app":"x"}},"template":`+always+`,"volumeClaimTemplates":[{"metadata":{"name":"v"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}`), `{"spec":{"replicas":1}}`, ""},
		{"ingress", nsd("networking.k8s.io/v1") + "/ingresses", "ing", obj("networking.k8s.io/v1", "Ingress", "ing", `,"spec":{"rules":[{"host":"a.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"s","port":{"number":80}}}}]}}],"tls":[{"hosts":["a.example.com"],"secretName":"t"}]}`), `{"metadata":{"annotations":{"p":"q"}}}`, ""},
		{"networkpolicy", nsd("networking.k8s.io/v1") + "/networkpolicies", "np", obj("networking.k8s.io/v1", "NetworkPolicy", "np", `,"spec":{"podSelector":{"matchLabels":{"a":"b"}},"ingress":[{"from":[{"ipBlock":{"cidr":"10.0.0.0/8","except":["10.1.0.0/16"]}}],"ports":[{"protocol":"TCP","port":80}]}]}`), `{"metadata":{"annotations":{"p":"q"}}}`, ""},
		{"persistentvolume", "/api/v1/persistentvolumes", cl, obj("v1", "PersistentVolume", cl, `,"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/x"},"persistentVolumeReclaimPolicy":"Retain"}`), `{"metadata":{"annotations":{"p":"q"}}}`, ""},
		{"storageclass", "/apis/storage.k8s.io/v1/storageclasses", cl, obj("storage.k8s.io/v1", "StorageClass", cl, `,"provisioner":"example.com/p","parameters":{"z":"1","a":"2"},"mountOptions":["ro"]`), `{"metadata":{"annotations":{"p":"q"}}}`, ""},
		{"priorityclass", "/apis/scheduling.k8s.io/v1/priorityclasses", cl, obj("scheduling.k8s.io/v1", "PriorityClass", cl, `,"value":1000,"description":"d"`), `{"description":"e"}`, ""},
		{"lease", nsd("coordination.k8s.io/v1") + "/leases", "lease", obj("coordination.k8s.io/v1", "Lease", "lease", `,"spec":{"holderIdentity":"h","leaseDurationSeconds":10}`), `{"spec":{"leaseDurationSeconds":11}}`, ""},
		{"event", api + "/events", "ev", obj("v1", "Event", "ev", `,"involvedObject":{"kind":"Pod","name":"p","namespace":"`+ns+`"},"reason":"Why","message":"m","type":"Normal","source":{"component":"c"},"count":1`), `{"count":2}`, ""},
		{"events.k8s.io event", nsd("events.k8s.io/v1") + "/events", "ev1", obj("events.k8s.io/v1", "Event", "ev1", `,"eventTime":"2026-01-02T03:04:05.000000Z","reportingController":"example.com/c","reportingInstance":"i","action":"Act","reason":"Why","type":"Normal","note":"n","regarding":{"kind":"Pod","name":"p","namespace":"`+ns+`"}`), `{"note":"o"}`, obj("events.k8s.io/v1", "Event", "bad", `,"reason":"Why","type":"Normal"`)},
		{"hpa v2", nsd("autoscaling/v2") + "/horizontalpodautoscalers", "hpa", obj("autoscaling/v2", "HorizontalPodAutoscaler", "hpa", `,"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":4,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":60}}}]}`), `{"spec":{"maxReplicas":5}}`, obj("autoscaling/v2", "HorizontalPodAutoscaler", "bad", `,"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":0}`)},
		{"hpa v1", nsd("autoscaling/v1") + "/horizontalpodautoscalers", "hpa1", obj("autoscaling/v1", "HorizontalPodAutoscaler", "hpa1", `,"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":3,"targetCPUUtilizationPercentage":70}`), `{"spec":{"maxReplicas":5}}`, ""},
		{"validatingadmissionpolicy", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", cl, obj("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", cl, `,"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["deployments"]}]},"validations":[{"expression":"object.spec.replicas <= 5","message":"m"}]}`), `{"metadata":{"annotations":{"p":"q"}}}`, ""},
		{"customresourcedefinition", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "things." + ns + ".example.org", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.` + ns + `.example.org","labels":{"b":"1"}},"spec":{"group":"` + ns + `.example.org","scope":"Namespaced","names":{"plural":"things","kind":"Thing","shortNames":["th"]},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","required":["b"],"properties":{"b":{"type":"integer","minimum":0},"a":{"type":"string"}}}}}},"additionalPrinterColumns":[{"name":"B","type":"integer","jsonPath":".spec.b"}]}]}}`, `{"metadata":{"annotations":{"p":"q"}}}`, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"bad"},"spec":{}}`},
		{"apiservice", "/apis/apiregistration.k8s.io/v1/apiservices", "v1." + ns + ".example.net", obj("apiregistration.k8s.io/v1", "APIService", "v1."+ns+".example.net", `,"spec":{"group":"`+ns+`.example.net","version":"v1","groupPriorityMinimum":1000,"versionPriority":15}`), `{"spec":{"versionPriority":16}}`, obj("apiregistration.k8s.io/v1", "APIService", "bad", `,"spec":{}`)},
		{"configmap paged", api + "/configmaps", "cm2", obj("v1", "ConfigMap", "cm2", `,"data":{"k":"v"}`), `{"data":{"l":"w"}}`, obj("v1", "ConfigMap", "Bad", "")},
	}
	var diffs int
	count := map[string]int{}
	// The kinds' steps run side by side, each server's in its own
	// goroutine: most of their time is their watches' second.
	answersOf := make([][2][]string, len(kinds))
	var wg sync.WaitGroup
	for ki, k := range kinds {
		answers := &answersOf[ki]
		for i, c := range []*rawClient{kube, ours} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				kindAnswers(t, c, k, &answers[i])
			}()
		}
	}
	wg.Wait()
	for ki, k := range kinds {
		answers := answersOf[ki]
		for j := range answers[0] {
			if j >= len(answers[1]) || answers[0][j] != answers[1][j] {
				diffs++
				what, _, _ := strings.Cut(answers[0][j], ":")
				count[k.what+" "+what]++
				t.Errorf("%s:\n kube:  %s\n serve: %s", k.what, answers[0][j], answers[1][j])
			}
		}
	}
	// Subresources, a paged list and a deletecollection.
	deps := nsd("apps/v1") + "/deployments"
	var answers [2][]string
	for i, c := range []*rawClient{kube, ours} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			add := func(what string, code int, b []byte) {
				answers[i] = append(answers[i], what+": "+http.StatusText(code)+" "+maskOrder(b))
			}
			created := func(what string, code int, b []byte) {
				add(what, code, b)
				if code != http.StatusCreated {
					t.Errorf("%s: %d %s", what, code, b)
				}
			}
			code, _, b := c.send("POST", deps, jsonCT, "application/json", obj("apps/v1", "Deployment", "dep", `,"spec":{"replicas":0,"selector":{"matchLabels":{"app":"x"}},"template":`+always+`}`))
			created("deployment", code, b)
			t.Cleanup(func() { c.send("DELETE", deps+"/dep", "", "application/json", "") })
			code, _, b = c.send("GET", deps+"/dep/scale", "", "application/json", "")
			add("deployment scale", code, b)
			code, _, b = c.send("PUT", deps+"/dep/scale", jsonCT, "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"dep","namespace":"`+ns+`"},"spec":{"replicas":0}}`)
			add("deployment scale update", code, b)
			code, _, b = c.send("PATCH", deps+"/dep/scale", "application/merge-patch+json", "application/json", `{"spec":{"replicas":0}}`)
			add("deployment scale patch", code, b)
			code, _, b = c.send("GET", deps+"/dep/status", "", "application/json", "")
			add("deployment status", code, b)
			code, _, b = c.send("POST", api+"/pods", jsonCT, "application/json", obj("v1", "Pod", "pod", `,"spec":`+podSpec))
			created("pod", code, b)
			t.Cleanup(func() { c.send("DELETE", api+"/pods/pod", "", "application/json", "") })
			code, _, b = c.send("GET", api+"/pods/pod/status", "", "application/json", "")
			add("pod status", code, b)
			code, _, b = c.send("PATCH", api+"/pods/pod/status", "application/merge-patch+json", "application/json", `{"status":{"message":"m"}}`)
			add("pod status patch", code, b)
			giz := gv + "/namespaces/" + ns + "/gizmos"
			code, _, b = c.send("POST", giz, jsonCT, "application/json", `{"apiVersion":"`+group+`/v1","kind":"Gizmo","metadata":{"name":"giz"},"spec":{"replicas":2},"status":{"replicas":1,"selector":"a=b"}}`)
			created("gizmo", code, b)
			code, _, b = c.send("GET", giz+"/giz/scale", "", "application/json", "")
			add("gizmo scale", code, b)
			code, _, b = c.send("PATCH", giz+"/giz/scale", "application/merge-patch+json", "application/json", `{"spec":{"replicas":3}}`)
			add("gizmo scale patch", code, b)
			code, _, b = c.send("GET", giz+"/giz", "", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "")
			add("gizmo partial", code, b)
			code, _, b = c.send("GET", giz, "", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "")
			add("gizmo list partial", code, b)
			code, _, b = c.send("GET", giz+"?watch=1&timeoutSeconds=1&resourceVersion=0", "", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "")
			add("gizmo watch partial", code, b)
			code, _, b = c.send("GET", giz+"?includeObject=Metadata", "", "application/json;as=Table;g=meta.k8s.io;v=v1", "")
			add("gizmo table", code, volatileAge.ReplaceAll(b, []byte(`"x"]`)))
			code, _, b = c.send("POST", giz, jsonCT, "application/json", `{"apiVersion":"`+group+`/v1","kind":"Gizmo","metadata":{"name":"giz"}}`)
			add("gizmo create again", code, b)
			code, _, b = c.send("POST", giz+"?dryRun=All", jsonCT, "application/json", `{"apiVersion":"`+group+`/v1","kind":"Gizmo","metadata":{"name":"giz2","labels":{"z":"1"}},"spec":{"b":1}}`)
			add("gizmo dry-run create", code, b)
			code, _, b = c.send("DELETE", giz+"/giz", "", "application/json", "")
			add("gizmo delete", code, b)
			code, _, b = c.send("GET", giz+"/giz", "", "application/json", "")
			add("gizmo gone", code, b)
			for _, n := range []string{"p1", "p2", "p3"} {
				c.send("POST", api+"/configmaps", jsonCT, "application/json", obj("v1", "ConfigMap", n, `,"data":{"k":"v"}`))
			}
			code, _, b = c.send("GET", api+"/configmaps?labelSelector=b%3D1&limit=2", "", "application/json", "")
			add("paged list", code, b)
			code, _, b = c.send("DELETE", api+"/configmaps?labelSelector=b%3D1", "", "application/json", "")
			add("deletecollection", code, b)
			code, _, b = c.send("DELETE", deps+"/dep", "", "application/json", "")
			add("deployment delete", code, b)
		}()
	}
	wg.Wait()
	for j := range answers[0] {
		if j >= len(answers[1]) || answers[0][j] != answers[1][j] {
			diffs++
			what, _, _ := strings.Cut(answers[0][j], ":")
			count[what]++
			t.Errorf("%s:\n kube:  %s\n serve: %s", what, answers[0][j], answers[1][j])
		}
	}
	if diffs > 0 {
		t.Errorf("%d answers differ: %v", diffs, count)
	}
}

// volatileAge is a Table row's last cell, an age.
var volatileAge = regexp.MustCompile(`"[0-9]+[smhd]"\]`)

// kindAnswers sends TestKubeAnswerBytesSameAsOurs' steps for k to c and
// appends its masked answers to answers.
func kindAnswers(t *testing.T, c *rawClient, k answerKind, answers *[]string) {
	add := func(what string, code int, b []byte) {
		s := maskOrder(b)
		if volatileKinds[k.what] {
			s = volatileStatus.ReplaceAllString(s, `"status":"x"$1`)
			s = volatileManagers.ReplaceAllString(s, `"managedFields":"x"`)
		}
		*answers = append(*answers, what+": "+http.StatusText(code)+" "+s)
	}
	one := k.collection + "/" + k.name
	code, _, b := c.send("POST", k.collection, jsonCT, "application/json", k.body)
	add("create", code, b)
	if code != http.StatusCreated {
		t.Errorf("%s: create: %d %s", k.what, code, b)
	}
	var created struct {
		Metadata struct{ ResourceVersion string }
	}
	_ = json.Unmarshal(b, &created)
	t.Cleanup(func() { c.send("DELETE", one, "", "application/json", "") })
	code, _, b = c.send("POST", k.collection, jsonCT, "application/json", k.body)
	add("create again", code, b)
	code, _, b = c.send("POST", k.collection+"?dryRun=All", jsonCT, "application/json", strings.Replace(k.body, `"name":"`+k.name+`"`, `"name":"`+k.name+`-dry"`, 1))
	add("dry-run create", code, b)
	if w, ok := settled[k.what]; ok {
		c.awaitBody(one, w)
	}
	code, _, b = c.send("GET", one, "", "application/json", "")
	add("get", code, b)
	code, _, b = c.send("PUT", one, jsonCT, "application/json", string(b))
	add("update", code, b)
	code, _, b = c.send("PATCH", one, "application/merge-patch+json", "application/json", k.patch)
	add("patch", code, b)
	code, _, b = c.send("GET", one, "", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "")
	add("get partial", code, b)
	list := k.collection + "?fieldSelector=metadata.name%3D" + k.name
	code, _, b = c.send("GET", list, "", "application/json", "")
	add("list", code, b)
	code, _, b = c.send("GET", list, "", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "")
	add("list partial", code, b)
	if !volatileKinds[k.what] {
		code, _, b = c.send("GET", list+"&watch=1&timeoutSeconds=1&resourceVersion="+created.Metadata.ResourceVersion, "", "application/json", "")
		add("watch", code, b)
	}
	if k.invalid != "" {
		code, _, b = c.send("POST", k.collection, jsonCT, "application/json", k.invalid)
		add("invalid", code, b)
	}
	code, _, b = c.send("DELETE", one+"?dryRun=All", "", "application/json", "")
	add("dry-run delete", code, b)
	if !volatileKinds[k.what] {
		code, _, b = c.send("DELETE", one, "", "application/json", "")
		add("delete", code, b)
		code, _, b = c.send("GET", one, "", "application/json", "")
		add("get gone", code, b)
		code, _, b = c.send("GET", one, "", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "")
		add("get gone partial", code, b)
	}
}
