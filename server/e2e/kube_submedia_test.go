package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"
)

// subMediaAccepts are the Accept headers each subresource request is
// sent with: none, each media type, and protobuf or JSON preferred by
// q-value.
var subMediaAccepts = []string{
	"", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
	"application/vnd.kubernetes.protobuf, application/json;q=0.9",
	"application/json;q=0.5, application/vnd.kubernetes.protobuf",
	"application/yaml;q=0.9, application/vnd.kubernetes.protobuf;q=0.8",
}

// subMetaAccepts are the Accept headers asking for a meta.k8s.io form
// of a subresource's answer: a Table (which only the subresources whose
// kube storage converts to Tables give: status, scale; another is a 406,
// or its fallback's media type), PartialObjectMetadata (of v1 and
// v1beta1, in JSON, YAML and protobuf, with and without a fallback) and
// PartialObjectMetadataList (one object is none: a 406).
var subMetaAccepts = []string{
	"application/json;as=Table;v=v1;g=meta.k8s.io",
	"application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
	"application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json",
	"application/yaml;as=Table;v=v1;g=meta.k8s.io, application/vnd.kubernetes.protobuf",
	"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
	"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io, application/json",
	"application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io",
	"application/yaml;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
	"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
	"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io, application/json",
	"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
	"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io, application/json",
}

// TestKubeSubresourceMediaSameAsOurs sends the same requests to every
// subresource serve serves (scale of the built-in workloads and of a
// custom resource, status, pods' ephemeralcontainers, resize, binding and
// eviction, a service account's token, a namespace's status and
// finalize, a CertificateSigningRequest's approval and status) with each
// Accept header of subMediaAccepts and subMetaAccepts and, for writes,
// bodies in JSON, YAML and protobuf: kube-apiserver and serve answer with
// the same code and content type, a protobuf Status byte for byte, and
// any other body with the same content once decoded and the values that
// differ between two servers masked (and a Table's ages). Errors (404,
// 409, 422, 400) come in the negotiated media type too.
func TestKubeSubresourceMediaSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	accepts := slices.Concat(subMediaAccepts, subMetaAccepts)
	gv := customResourcesSideBySide(t, ns, kube, ours)
	group := strings.Split(gv, "/")[2]
	api, apps := "/api/v1/namespaces/"+ns, "/apis/apps/v1/namespaces/"+ns
	gizmos := gv + "/namespaces/" + ns + "/gizmos"
	template := `"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
	selector := `"selector":{"matchLabels":{"app":"web"}}`
	setup := []struct{ path, body string }{
		{apps + "/deployments", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":1,` + selector + `,` + template + `}}`},
		{apps + "/replicasets", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web"},"spec":{"replicas":1,` + selector + `,` + template + `}}`},
		{apps + "/statefulsets", `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"web"},"spec":{"replicas":1,"serviceName":"web",` + selector + `,` + template + `}}`},
		{api + "/replicationcontrollers", `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"web"},"spec":{"replicas":1,"selector":{"app":"web"},` + template + `}}`},
		{api + "/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}`},
		{gizmos, `{"apiVersion":"` + group + `/v1","kind":"Gizmo","metadata":{"name":"g"},"spec":{"replicas":1}}`},
	}
	pods := []string{"p", "evicted"}
	bodyTypes := []string{jsonCT, "application/yaml", "application/vnd.kubernetes.protobuf"}
	for i := range len(bodyTypes) * len(accepts) {
		pods = append(pods, fmt.Sprintf("bound-%d", i))
	}
	for _, p := range pods {
		setup = append(setup, struct{ path, body string }{api + "/pods",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + p + `"},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m"}}}]}}`})
	}
	csrs := "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	csr := csrs + "/csr-" + ns
	setup = append(setup, struct{ path, body string }{csrs, `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest",` +
		`"metadata":{"name":"csr-` + ns + `"},"spec":{"request":"` + base64.StdEncoding.EncodeToString(csrPEM(t)) + `",` +
		`"signerName":"example.com/signer","usages":["digital signature"]}}`})
	for _, c := range []*rawClient{kube, ours} {
		t.Cleanup(func() { c.do("DELETE", csr, "", "") })
		for _, s := range setup {
			if code, m := c.do("POST", s.path, jsonCT, s.body); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", s.path, code, m)
			}
		}
	}

	type request struct{ method, path, ctype, body string }
	var reqs []request
	get := func(paths ...string) {
		for _, p := range paths {
			reqs = append(reqs, request{"GET", p, "", ""})
		}
	}
	// Reads, of objects that exist and of missing ones (404).
	get(apps+"/deployments/web/scale", apps+"/replicasets/web/scale", apps+"/statefulsets/web/scale",
		api+"/replicationcontrollers/web/scale", gizmos+"/g/scale", gizmos+"/g/status",
		apps+"/deployments/web/status", api+"/pods/p/status", api+"/pods/p/ephemeralcontainers", api+"/pods/p/resize",
		"/api/v1/namespaces/"+ns+"/status", csr+"/approval", csr+"/status",
		apps+"/deployments/nope/scale", api+"/replicationcontrollers/nope/scale", gizmos+"/nope/scale", gizmos+"/nope/status",
		api+"/pods/nope/status", api+"/pods/nope/ephemeralcontainers")

	// Writes of the Scale in each body type: a good one, a stale
	// resourceVersion (409), negative replicas (422).
	scale := func(name string, replicas int32, rv string) *autoscalingv1.Scale {
		return &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: rv}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	}
	for _, p := range []string{apps + "/deployments/web/scale", api + "/replicationcontrollers/web/scale", gizmos + "/g/scale", apps + "/deployments/nope/scale"} {
		name := strings.Split(p, "/")[len(strings.Split(p, "/"))-2]
		for _, s := range []*autoscalingv1.Scale{scale(name, 2, ""), scale(name, 2, "1"), scale(name, -1, "")} {
			for _, ct := range []string{jsonCT, "application/yaml", "application/vnd.kubernetes.protobuf"} {
				reqs = append(reqs, request{"PUT", p, ct, encodeAs(t, s, ct)})
			}
		}
		reqs = append(reqs, request{"PATCH", p, "application/merge-patch+json", `{"spec":{"replicas":3}}`},
			request{"PATCH", p, "application/merge-patch+json", `{"spec":{"replicas":-3}}`},
			request{"PATCH", p + "?fieldManager=m&force=true", "application/apply-patch+yaml",
				`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"` + name + `"},"spec":{"replicas":4}}`})
	}
	// Writes of a status.
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Message: "m"}}
	stale := pod.DeepCopy()
	stale.ResourceVersion = "1"
	for _, o := range []*corev1.Pod{pod, stale} {
		for _, ct := range []string{jsonCT, "application/yaml", "application/vnd.kubernetes.protobuf"} {
			reqs = append(reqs, request{"PUT", api + "/pods/p/status", ct, encodeAs(t, o, ct)})
		}
	}
	// A CSR's approval, a namespace's finalize.
	approval := &certificatesv1.CertificateSigningRequest{TypeMeta: metav1.TypeMeta{APIVersion: "certificates.k8s.io/v1", Kind: "CertificateSigningRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: "csr-" + ns},
		Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
			{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "No", Message: "denied"}}}}
	finalize := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}}
	for _, ct := range bodyTypes {
		reqs = append(reqs, request{"PUT", csr + "/approval", ct, encodeAs(t, approval, ct)},
			request{"PUT", "/api/v1/namespaces/" + ns + "/finalize", ct, encodeAs(t, finalize, ct)})
	}
	reqs = append(reqs,
		request{"PATCH", csr + "/status", "application/merge-patch+json", `{"status":{"conditions":[{"type":"Failed","status":"True","reason":"R","message":"m"}]}}`},
		request{"PATCH", api + "/pods/p/status", "application/merge-patch+json", `{"status":{"message":"patched"}}`},
		request{"PATCH", api + "/pods/p/status", "application/strategic-merge-patch+json", `{"status":{"phase":"Bogus"}}`},
		request{"PATCH", api + "/pods/p/ephemeralcontainers", "application/strategic-merge-patch+json", `{"spec":{"ephemeralContainers":[{"name":"debug"}]}}`},
		request{"PATCH", api + "/pods/p/resize", "application/strategic-merge-patch+json", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"}}}]}}`},
		request{"PATCH", gizmos + "/g/status", "application/merge-patch+json", `{"status":{"replicas":1}}`},
		request{"PATCH", gizmos + "/nope/status", "application/merge-patch+json", `{"status":{"replicas":1}}`},
		request{"PATCH", "/api/v1/namespaces/" + ns + "/status", "application/merge-patch+json", `{"metadata":{"labels":{"x":"y"}}}`},
	)
	// Creates on subresources: an eviction (dry run, of a missing pod,
	// of another name: 400), a token (of a missing service account: 404),
	// a binding of a pod bound already (409).
	for _, ct := range bodyTypes {
		dry := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
			ObjectMeta: metav1.ObjectMeta{Name: "evicted", Namespace: ns}, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{"All"}}}
		missing := &policyv1.Eviction{TypeMeta: dry.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "nope", Namespace: ns}}
		wrong := &policyv1.Eviction{TypeMeta: dry.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}}
		token := &authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"},
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"x"}}}
		bind := &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
			ObjectMeta: metav1.ObjectMeta{Name: "bound-0"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
		reqs = append(reqs,
			request{"POST", api + "/pods/evicted/eviction", ct, encodeAs(t, dry, ct)},
			request{"POST", api + "/pods/nope/eviction", ct, encodeAs(t, missing, ct)},
			request{"POST", api + "/pods/evicted/eviction", ct, encodeAs(t, wrong, ct)},
			request{"POST", api + "/serviceaccounts/robot/token", ct, encodeAs(t, token, ct)},
			request{"POST", api + "/serviceaccounts/nope/token", ct, encodeAs(t, token, ct)},
			request{"POST", api + "/pods/bound-0/binding", ct, encodeAs(t, bind, ct)},
		)
	}
	compare := func(method, path, accept, ctype, body string) {
		k, o := kube.mediaAnswer(method, path, accept, ctype, body), ours.mediaAnswer(method, path, accept, ctype, body)
		if k != o {
			t.Errorf("%s %s [%s] [Accept %s]:\n kube:  %s\n serve: %s", method, path, ctype, accept, k, o)
		}
	}
	// A binding succeeds once per pod: each body type and Accept binds
	// a pod of its own.
	i := 0
	for _, ct := range bodyTypes {
		for _, accept := range accepts {
			name := fmt.Sprintf("bound-%d", i)
			i++
			bind := &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
				ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
			compare("POST", api+"/pods/"+name+"/binding", accept, ct, encodeAs(t, bind, ct))
		}
	}
	for _, r := range reqs {
		for _, accept := range accepts {
			compare(r.method, r.path, accept, r.ctype, r.body)
		}
	}
	// A Table of a subresource with each includeObject; the status of a
	// CustomResourceDefinition, whose storage makes no Table (its
	// fallback would show conditions' times, its metadata the status
	// controller's managedFields, which serve's does not record: neither
	// is compared).
	for _, p := range []string{apps + "/deployments/web/scale", gizmos + "/g/scale", api + "/pods/p/status", gizmos + "/g/status"} {
		for _, q := range []string{"?includeObject=None", "?includeObject=Object", "?includeObject=Metadata", "?includeObject=bogus"} {
			compare("GET", p+q, subMetaAccepts[0], "", "")
		}
	}
	crdStatus := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos." + group + "/status"
	for _, accept := range []string{subMetaAccepts[0], subMetaAccepts[10]} {
		compare("GET", crdStatus, accept, "", "")
	}
}

// csrPEM is a PEM certificate request for a fresh key.
func csrPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "submedia"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// encodeAs encodes obj (its apiVersion and kind set) as a request body of
// media type ct.
func encodeAs(t *testing.T, obj runtime.Object, ct string) string {
	t.Helper()
	if ct == "application/vnd.kubernetes.protobuf" {
		var buf bytes.Buffer
		if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if ct == "application/yaml" {
		if b, err = sigsyaml.JSONToYAML(b); err != nil {
			t.Fatal(err)
		}
	}
	return string(b)
}

// mediaAnswer describes an answer for comparison: code, content type,
// and the body: a protobuf Status as its bytes, another protobuf object
// as its kind and masked JSON, JSON and YAML as their masked JSON.
func (c *rawClient) mediaAnswer(method, path, accept, ctype, body string) string {
	c.t.Helper()
	code, hdr, b := c.send(method, path, ctype, accept, body)
	ct := hdr.Get("Content-Type")
	out := fmt.Sprintf("%d %s ", code, ct)
	var j []byte
	switch {
	case strings.HasPrefix(ct, "application/vnd.kubernetes.protobuf"):
		obj, gvk, err := protobuf.NewSerializer(mediaScheme, mediaScheme).Decode(b, nil, nil)
		if err != nil {
			return out + fmt.Sprintf("undecodable %v: %q", err, b)
		}
		if gvk.Kind == "Status" {
			return out + fmt.Sprintf("Status %x", b)
		}
		out += gvk.String() + " "
		if j, err = json.Marshal(obj); err != nil {
			return out + err.Error()
		}
	case strings.HasPrefix(ct, "application/yaml"):
		var err error
		if j, err = sigsyaml.YAMLToJSON(b); err != nil {
			return out + fmt.Sprintf("bad YAML %q", b)
		}
	default:
		j = b
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return out + fmt.Sprintf("%q", b)
	}
	return out + jsonOf(maskVolatile(v))
}

// mediaScheme decodes the protobuf answers mediaAnswer compares: client-go's
// kinds and meta.k8s.io's (partial metadata of v1 and v1beta1).
var mediaScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{scheme.AddToScheme, metav1.AddMetaToScheme, metav1beta1.AddMetaToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// maskVolatile replaces the values two servers give differently (uids,
// resourceVersions, times, tokens, the requester's extra) in a decoded
// JSON value.
func maskVolatile(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "managedFields":
				// Their managers (the namespaces were made by
				// different clients) and order (by time) differ.
				if entries, ok := x.([]any); ok {
					for _, e := range entries {
						if m, ok := e.(map[string]any); ok {
							m["manager"], m["time"] = "X", "X"
						}
					}
					slices.SortFunc(entries, func(a, b any) int { return strings.Compare(jsonOf(a), jsonOf(b)) })
				}
			case "cells":
				// A Table's ages ("5s"), which the two servers'
				// objects may not share.
				if cells, ok := x.([]any); ok {
					for i, c := range cells {
						if s, ok := c.(string); ok && ageRE.MatchString(s) {
							cells[i] = "<age>"
						}
					}
				}
			case "uid", "resourceVersion", "creationTimestamp", "time", "token", "expirationTimestamp", "startTime",
				"lastUpdateTime", "lastTransitionTime", // a condition's, set by each server's clock
				"extra": // a CSR's requester's: the client certificate's fingerprint
				v[k] = "X"
			default:
				v[k] = maskVolatile(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = maskVolatile(x)
		}
	case string:
		return uidRE.ReplaceAllString(v, "<uid>")
	}
	return v
}

// ageRE is a Table cell of an age, in each form kube's HumanDuration
// writes ("7s", "2m12s", "5m", "3h10m", "2d", "1y40d"): the test can take
// over two minutes when the machine is busy.
var ageRE = regexp.MustCompile(`^(?:[0-9]+[smhdy])+$`)
