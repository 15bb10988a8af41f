package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// typedKindOf is the built-in resource plural's typed kind.
func typedKindOf(t testing.TB, plural string) *typedKind {
	t.Helper()
	for _, r := range builtinResources() {
		if r.plural == plural && r.typed() != nil {
			return r.typed()
		}
	}
	t.Fatalf("no built-in %s", plural)
	return nil
}

// TestBodyExact: kinds with a field json.Marshal rewrites, or a value
// with a JSON form of its own (a time, an IntOrString) outside their own
// metadata, never use a protobuf body as decoded.
func TestBodyExact(t *testing.T) {
	for _, tc := range []struct {
		plural string
		exact  bool
	}{
		{"configmaps", true}, {"secrets", true}, {"serviceaccounts", true}, {"roles", true},
		{"services", false},        // status.conditions[].lastTransitionTime
		{"namespaces", false},      // status.conditions[].lastTransitionTime
		{"pods", false},            // resource.Quantity, times
		{"deployments", false},     // the pod template's metadata.creationTimestamp
		{"leases", false},          // spec.renewTime, a MicroTime
		{"networkpolicies", false}, // ports[].port, an IntOrString
		{"controllerrevisions", false},
	} {
		if got := typedKindOf(t, tc.plural).bodyType() != nil; got != tc.exact {
			t.Errorf("%s: body used as decoded %v, want %v", tc.plural, got, tc.exact)
		}
	}
}

// bodyRoutes decodes the protobuf body pb of tk's kind both ways
// decodeTyped may: from its JSON form (slow), and as the protobuf decoded
// it (fast, nil when the body keeps no view), after the server has set
// and dropped metadata as a create does.
func bodyRoutes(t testing.TB, tk *typedKind, pb []byte) (fast, slow runtime.Object) {
	t.Helper()
	d := protoDoc(t, tk, pb)
	d.setMeta("uid", "4b4b6a5c-1f0e-4d8e-9f5e-0f6f2a9d8c11")
	d.setMeta("creationTimestamp", "2026-12-03T04:05:06Z")
	d.setMeta("namespace", "default")
	delete(d.meta, "resourceVersion")
	delete(d.meta, "generation")
	into, err := tk.scheme.New(tk.external)
	if err != nil {
		t.Fatal(err)
	}
	slow, err = decodeJSONInto(tk, d, d.encode(), into, true)
	if err != nil {
		t.Fatal(err)
	}
	return d.takeBody(tk), slow
}

// protoDoc is the doc of the protobuf body pb of tk's kind, as decodeBody
// makes it (of tk's kind and version), with its body view.
func protoDoc(t testing.TB, tk *typedKind, pb []byte) *doc {
	t.Helper()
	ext, j, err := decodeProtobuf(pb)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decodeDoc(j)
	if err != nil {
		t.Fatal(err)
	}
	if d.apiVersion == "" {
		d.apiVersion = tk.external.GroupVersion().String()
	}
	if d.kind == "" {
		d.kind = tk.external.Kind
	}
	d.rememberBody(tk, ext, j)
	return d
}

// TestBodyViewFollowsDoc: the body view is handed out once, only while
// the doc holds the fields other than metadata it was remembered with,
// and with the doc's metadata.
func TestBodyViewFollowsDoc(t *testing.T) {
	tk := typedKindOf(t, "configmaps")
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "1"}},
		Data: map[string]string{"k": "v"}}
	pb := []byte(protoBody(t, cm))
	fast, slow := bodyRoutes(t, tk, pb)
	if fast == nil {
		t.Fatal("no body view for a ConfigMap")
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("as decoded %#v\nfrom JSON %#v", fast, slow)
	}
	if got := fast.(*corev1.ConfigMap); got.UID == "" || got.Namespace != "default" || got.Kind != "ConfigMap" {
		t.Fatalf("the doc's metadata was not taken: %#v", got)
	}

	for name, change := range map[string]func(*doc){
		"data": func(d *doc) { d.setField("data", map[string]string{"k": "changed"}) },
		"new":  func(d *doc) { d.setField("binaryData", map[string]string{}) },
		"kind": func(d *doc) { d.kind = "Secret" },
		"none": func(*doc) {},
	} {
		d := protoDoc(t, tk, pb)
		change(d)
		got := d.takeBody(tk)
		if (got != nil) != (name == "none") {
			t.Errorf("after a change of %s: handed out %v", name, got != nil)
		}
		if d.takeBody(tk) != nil {
			t.Errorf("after a change of %s: handed out twice", name)
		}
	}
}

// TestBodyViewEqualsJSONDecode: for bodies json.Marshal rewrites (HTML
// characters, line separators, empty and binary values) the object as
// decoded equals the one decoded from its JSON; for invalid UTF-8, which
// json.Marshal replaces, the body keeps no view.
func TestBodyViewEqualsJSONDecode(t *testing.T) {
	for _, v := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "line\u2028sep\u2029", "\ufffd kept", "tab\t\x00nul", "\xff\xfe bad"} {
		checkBodyView(t, v, []byte(v), v)
	}
}

func checkBodyView(t testing.TB, value string, bin []byte, label string) {
	t.Helper()
	objs := []struct {
		plural string
		obj    runtime.Object
	}{
		{"configmaps", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "12", Generation: 4, Annotations: map[string]string{"a": value}, Labels: map[string]string{"l": label}},
			Data:       map[string]string{"k": value, value + "k": "v"}, BinaryData: map[string][]byte{"b": bin, "e": {}}}},
		{"secrets", &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Data:       map[string][]byte{"k": bin}, StringData: map[string]string{"s": value}, Type: corev1.SecretType(value)}},
		{"serviceaccounts", &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta:       metav1.ObjectMeta{GenerateName: value},
			Secrets:          []corev1.ObjectReference{{Name: value, FieldPath: value}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: value}, {}}}},
	}
	for _, o := range objs {
		tk := typedKindOf(t, o.plural)
		var pb bytes.Buffer
		if err := protobufCodec.Encode(o.obj, &pb); err != nil {
			t.Fatal(err)
		}
		fast, slow := bodyRoutes(t, tk, pb.Bytes())
		j, err := json.Marshal(o.obj)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(j, []byte(`\ufffd`)) {
			if fast != nil {
				t.Errorf("%s %q: a view of a body json.Marshal rewrote", o.plural, value)
			}
			continue
		}
		if fast == nil {
			t.Errorf("%s %q: no view", o.plural, value)
			continue
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s %q: as decoded\n%#v\nfrom JSON\n%#v", o.plural, value, fast, slow)
		}
	}
}

// FuzzBodyView: a protobuf body used as decoded is the object decodeTyped
// would decode from its JSON form.
func FuzzBodyView(f *testing.F) {
	f.Add("v", []byte("b"), "l")
	f.Add("<&>\u2028", []byte{}, "")
	f.Add("\xff", []byte{0, 1}, "\u00e9")
	f.Fuzz(func(t *testing.T, value string, bin []byte, label string) {
		checkBodyView(t, value, bin, label)
	})
}

// TestTypeKeyInAnotherCase: a body with a second apiVersion or kind in
// another case is decoded as kube's serializer decodes it (encoding/json
// reads the last of them), not as the exact keys say; and a protobuf body
// that JSON cannot carry is a 400.
func TestTypeKeyInAnotherCase(t *testing.T) {
	e := newEnv(t)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"folded"},"APIVERSION":"apps/v1"}`
	r := e.do("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Ignore", body)
	if r.code != 400 || !bytes.Contains(r.body, []byte(`no kind \"ConfigMap\" is registered for version \"apps/v1\"`)) {
		t.Fatalf("got %d %s", r.code, r.body)
	}

	np := &networkingv1.NetworkPolicy{TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "np"},
		Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Port: &intstr.IntOrString{Type: 2, IntVal: 80}}}}}}}
	r = e.do("POST", "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", protoBody(t, np),
		"Content-Type", contentProtobuf)
	if r.code != 400 || !bytes.Contains(r.body, []byte("unable to decode protobuf body")) {
		t.Fatalf("an IntOrString of an unknown type: got %d %s", r.code, r.body)
	}
}
