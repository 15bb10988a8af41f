package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestTypedViewFollowsDoc: a doc's view object is handed out only while
// the doc holds the fields it was remembered with, and only once.
func TestTypedViewFollowsDoc(t *testing.T) {
	newDoc := func() *doc {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "1"}},
			Data: map[string]string{"k": "v"}}
		b, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		d := &doc{apiVersion: "v1", kind: "ConfigMap"}
		if err := d.splitEncoded(b); err != nil {
			t.Fatal(err)
		}
		d.remember(cm)
		return d
	}
	d := newDoc()
	if obj := d.takeView(); obj == nil || obj.(*corev1.ConfigMap).Data["k"] != "v" {
		t.Fatalf("an unchanged doc's view: %v", obj)
	}
	if d.takeView() != nil {
		t.Fatal("a view was handed out twice")
	}
	for name, change := range map[string]func(*doc){
		"data":     func(d *doc) { d.setField("data", map[string]string{"k": "changed"}) },
		"new":      func(d *doc) { d.setField("binaryData", map[string]string{}) },
		"kind":     func(d *doc) { d.kind = "Secret" },
		"metadata": func(d *doc) { d.setMeta("uid", "u-2") },
		"label":    func(d *doc) { d.setMeta("labels", map[string]string{"x": "2"}) },
		"dropped":  func(d *doc) { delete(d.meta, "labels") },
	} {
		d := newDoc()
		change(d)
		if d.takeView() != nil {
			t.Errorf("handed out after a change of %s", name)
		}
	}
}

// TestProtoExact: kinds with fields json.Marshal rewrites keep no view.
func TestProtoExact(t *testing.T) {
	for _, tc := range []struct {
		plural string
		exact  bool
	}{
		{"configmaps", true}, {"secrets", true}, {"services", true}, {"namespaces", true},
		{"pods", false},                            // resource.Quantity
		{"controllerrevisions", false},             // RawExtension
		{"validatingwebhookconfigurations", false}, // caBundle []byte
		{"customresourcedefinitions", false},       // apiextensions JSON
		{"certificatesigningrequests", false},      // request []byte
	} {
		var r *resource
		for _, b := range builtinResources() {
			if b.plural == tc.plural {
				r = b
			}
		}
		if r == nil || r.typed() == nil {
			t.Fatalf("no built-in %s", tc.plural)
		}
		if got := r.typed().protoExact(); got != tc.exact {
			t.Errorf("%s: protoExact %v, want %v", tc.plural, got, tc.exact)
		}
	}
}

// TestProtobufCreateAnswersStored: a create sent and answered in protobuf
// (client-go's typed clients) answers the bytes a GET of the stored
// object answers, for every kind the group tests create and the core
// kinds whose strategies or REST layer change the object (defaults,
// stringData, an allocated clusterIP, a CRD's status).
func TestProtobufCreateAnswersStored(t *testing.T) {
	e := newEnv(t)
	type create struct {
		path string
		obj  map[string]any
	}
	cases := []create{
		{"/api/v1/namespaces/default/configmaps", obj("v1", "ConfigMap", "cm", map[string]any{
			"data": map[string]any{"a": "1"}, "binaryData": map[string]any{"b": "AAEC"}})},
		{"/api/v1/namespaces/default/secrets", obj("v1", "Secret", "s", map[string]any{
			"stringData": map[string]any{"a": "1"}})},
		{"/api/v1/namespaces/default/pods", obj("v1", "Pod", "p", map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i",
				"resources": map[string]any{"limits": map[string]any{"cpu": "1000m", "memory": "1Gi"}}}}}})},
		{"/api/v1/namespaces/default/services", obj("v1", "Service", "svc", map[string]any{
			"spec": map[string]any{"ports": []any{map[string]any{"port": 80}}}})},
		{"/api/v1/namespaces", obj("v1", "Namespace", "ns-proto", nil)},
		{"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", obj("apiextensions.k8s.io/v1",
			"CustomResourceDefinition", "foos.proto.example.com", map[string]any{"spec": map[string]any{
				"group": "proto.example.com", "scope": "Namespaced",
				"names": map[string]any{"plural": "foos", "singular": "foo", "kind": "Foo"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
						"x-kubernetes-preserve-unknown-fields": true}}}}}})},
	}
	for _, k := range groupKinds(t) {
		cases = append(cases, create{k.path, k.valid})
	}
	jsonDec := kjsonserializer.NewSerializerWithOptions(kjsonserializer.DefaultMetaFactory,
		protobufScheme, protobufScheme, kjsonserializer.SerializerOptions{})
	for _, tc := range cases {
		name := path(tc.obj, "metadata", "name").(string)
		t.Run(tc.path[strings.LastIndex(tc.path, "/")+1:], func(t *testing.T) {
			e.t = t
			b, err := json.Marshal(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			typed, _, err := jsonDec.Decode(b, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var body bytes.Buffer
			if err := protobufCodec.Encode(typed, &body); err != nil {
				t.Fatal(err)
			}
			created := e.do("POST", tc.path, body.String(), "Content-Type", contentProtobuf, "Accept", contentProtobuf)
			if created.code != 201 {
				t.Fatalf("create: %d %q", created.code, created.body)
			}
			got := e.do("GET", tc.path+"/"+name, nil, "Accept", contentProtobuf)
			if got.code != 200 {
				t.Fatalf("get: %d %q", got.code, got.body)
			}
			if strings.HasSuffix(tc.path, "/customresourcedefinitions") {
				// kube's naming and establishing controllers write a
				// CRD's status after its create (crdcontrollers.go):
				// the create answers what its own write stored, the
				// same object but for its status, resourceVersion and
				// managedFields. The update starts from the object now.
				if a, b := withoutStatus(t, created.body), withoutStatus(t, got.body); a != b {
					t.Fatalf("the create answered\n%s\nthe stored object is\n%s", a, b)
				}
				created = got
			} else if !bytes.Equal(created.body, got.body) {
				t.Fatalf("the create answered\n%s\nthe stored object is\n%s", describeProto(t, created.body), describeProto(t, got.body))
			}

			// An update, sent and answered in protobuf, likewise.
			obj, _, err := protobufCodec.Decode(created.body, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := meta.Accessor(obj)
			if err != nil {
				t.Fatal(err)
			}
			m.SetLabels(map[string]string{"updated": "yes"})
			body.Reset()
			if err := protobufCodec.Encode(obj, &body); err != nil {
				t.Fatal(err)
			}
			updated := e.do("PUT", tc.path+"/"+name, body.String(), "Content-Type", contentProtobuf, "Accept", contentProtobuf)
			if updated.code != 200 {
				t.Fatalf("update: %d %q", updated.code, updated.body)
			}
			got = e.do("GET", tc.path+"/"+name, nil, "Accept", contentProtobuf)
			if !bytes.Equal(updated.body, got.body) || bytes.Equal(updated.body, created.body) {
				t.Fatalf("the update answered\n%s\nthe stored object is\n%s", describeProto(t, updated.body), describeProto(t, got.body))
			}
		})
	}
}

// withoutStatus is a protobuf response as JSON without its status,
// resourceVersion and managedFields.
func withoutStatus(t *testing.T, b []byte) string {
	t.Helper()
	obj, _, err := protobufCodec.Decode(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		delete(md, "managedFields")
	}
	j, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

// describeProto is a protobuf response as JSON, for a test's message.
func describeProto(t *testing.T, b []byte) string {
	obj, _, err := protobufCodec.Decode(b, nil, nil)
	if err != nil {
		return err.Error()
	}
	j, err := json.Marshal(obj.(runtime.Object))
	if err != nil {
		return err.Error()
	}
	return string(j)
}

// protoBody is obj encoded as client-go's typed clients send it.
func protoBody(t *testing.T, obj runtime.Object) string {
	t.Helper()
	var b bytes.Buffer
	if err := protobufCodec.Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestProtobufAnswersStoredOddValues: the protobuf answer to a write is
// what a GET then answers for values json.Marshal rewrites or a protobuf
// body may hold and JSON may not: invalid UTF-8, escaped characters, raw
// JSON with spaces, an empty []byte, an IntOrString with a stray string.
func TestProtobufAnswersStoredOddValues(t *testing.T) {
	e := newEnv(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	const revs = "/apis/apps/v1/namespaces/default/controllerrevisions"
	const hooks = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
	hook := func(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
		none := admissionregistrationv1.SideEffectClassNone
		url := "https://hook.example.com/"
		return &admissionregistrationv1.ValidatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a.b.c", SideEffects: &none,
				AdmissionReviewVersions: []string{"v1"},
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: []byte{}}}},
		}
	}
	cases := []struct {
		path, name, body, contentType string
	}{
		{cms, "utf8", protoBody(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "utf8"}, Data: map[string]string{"a": "x\xffy"}}), contentProtobuf},
		{cms, "escaped", protoBody(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "escaped", Annotations: map[string]string{"a": "<b>&\u2028"}},
			Data:       map[string]string{"a": "<b>&"}}), contentProtobuf},
		{"/api/v1/namespaces/default/services", "stray", protoBody(t, &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "stray"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80,
				TargetPort: intstr.IntOrString{Type: intstr.Int, IntVal: 8080, StrVal: "stray"}}}}}), contentProtobuf},
		{revs, "raw", protoBody(t, &appsv1.ControllerRevision{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ControllerRevision"},
			ObjectMeta: metav1.ObjectMeta{Name: "raw"}, Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{ "a": "<b>" }`)}}), contentProtobuf},
		{revs, "raw-json", `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"raw-json"},"revision":1,"data":{"a":"<b>"}}`, "application/json"},
		{hooks, "empty-bytes", protoBody(t, hook("empty-bytes")), contentProtobuf},
		// Pod defaulting sums the containers' requests into the pod's:
		// 1Ki + 976 is "2000", which a decode gives back as "2k", and
		// 7Ei + 1Ei is 2^63, which it gives back capped.
		{"/api/v1/namespaces/default/pods", "sum", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"sum"},"spec":{"resources":{"limits":{"memory":"4Gi","cpu":"2"}},` +
			`"containers":[{"name":"a","image":"i","resources":{"requests":{"memory":"1Ki","cpu":"1"}}},{"name":"b","image":"i","resources":{"requests":{"memory":"976","cpu":"1000m"}}}]}}`, "application/json"},
		{"/api/v1/namespaces/default/pods", "big", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big"},"spec":{"resources":{"limits":{"cpu":"2"}},` +
			`"containers":[{"name":"a","image":"i","resources":{"requests":{"memory":"7Ei","cpu":"1"}}},{"name":"b","image":"i","resources":{"requests":{"memory":"1Ei","cpu":"1"}}}]}}`, "application/json"},
		{hooks, "empty-bytes-json", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"empty-bytes-json"},` +
			`"webhooks":[{"name":"a.b.c","clientConfig":{"url":"https://hook.example.com/","caBundle":""},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`, "application/json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			created := e.do("POST", tc.path, tc.body, "Content-Type", tc.contentType, "Accept", contentProtobuf)
			if created.code != 201 {
				t.Fatalf("create: %d %q", created.code, created.body)
			}
			got := e.do("GET", tc.path+"/"+tc.name, nil, "Accept", contentProtobuf)
			if !bytes.Equal(created.body, got.body) {
				t.Fatalf("the create answered\n%q\nthe stored object is\n%q", created.body, got.body)
			}
		})
	}
}

// TestProtobufBodiesDecodedAsJSON: a protobuf body is refused or repaired
// as its JSON form is, so nothing reaches storage that a JSON client
// could not have sent: a time no JSON decoder reads back is kube's 400
// (and the collection still lists in protobuf), invalid UTF-8 is stored
// as U+FFFD, and two keys that become one are a duplicate field.
func TestProtobufBodiesDecodedAsJSON(t *testing.T) {
	e := newEnv(t)
	const leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	far := metav1.NewMicroTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	lease := &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: "far"}, Spec: coordinationv1.LeaseSpec{RenewTime: &far}}
	if r := e.do("POST", leases, protoBody(t, lease), "Content-Type", contentProtobuf); r.code != 400 ||
		!strings.Contains(string(r.body), "cannot be handled as a Lease") {
		t.Errorf("far time: %d %s", r.code, r.body)
	}
	if r := e.do("GET", leases, nil, "Accept", contentProtobuf); r.code != 200 {
		t.Errorf("protobuf list: %d %q", r.code, r.body)
	}

	const revs = "/apis/apps/v1/namespaces/default/controllerrevisions"
	rev := &appsv1.ControllerRevision{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ControllerRevision"},
		ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Revision: 1, Data: runtime.RawExtension{Raw: []byte("{\"a\":\"\xff\"}")}}
	e.must(201, "POST", revs, protoBody(t, rev), "Content-Type", contentProtobuf)
	kv, err := e.store.Get(t.Context(), "/registry/controllerrevisions/default/bad")
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(kv.Value) || !strings.Contains(string(kv.Value), "\ufffd") {
		t.Errorf("stored %q, want U+FFFD for the invalid byte", kv.Value)
	}

	dup := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "dup"}, Data: map[string]string{"a\xff": "1", "a\xfe": "2"}}
	r := e.do("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", protoBody(t, dup), "Content-Type", contentProtobuf)
	if r.code != 400 || !strings.Contains(string(r.body), `duplicate field`) {
		t.Errorf("Strict: %d %s", r.code, r.body)
	}
	r = e.do("POST", "/api/v1/namespaces/default/configmaps", protoBody(t, dup), "Content-Type", contentProtobuf)
	if w := r.hdr.Values("Warning"); len(w) == 0 || !strings.Contains(strings.Join(w, " "), "duplicate field") {
		t.Errorf("Warn: %d, warnings %q", r.code, w)
	}
}
