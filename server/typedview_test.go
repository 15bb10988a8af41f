package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// TestTypedViewFollowsDoc: a doc's view object is handed out only while
// the doc holds the fields it was remembered with, and only once.
func TestTypedViewFollowsDoc(t *testing.T) {
	cmKind := builtinResources()[1].typed()
	newDoc := func() *doc {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "1"}},
			Data:       map[string]string{"k": "v"}}
		b, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		d, err := decodeDoc(b)
		if err != nil {
			t.Fatal(err)
		}
		d.remember(cm, false)
		return d
	}

	d := newDoc()
	d.setMeta("name", "b")
	d.setMeta("uid", "u-1")
	obj, ok := d.bodyObject(cmKind, true)
	if !ok {
		t.Fatal("an unchanged body's object was not handed out")
	}
	cm := obj.(*corev1.ConfigMap)
	if cm.Name != "b" || cm.UID != "u-1" || cm.Labels["x"] != "1" || cm.Data["k"] != "v" {
		t.Fatalf("object %+v, want the doc's metadata and the body's data", cm)
	}
	if _, ok := d.bodyObject(cmKind, true); ok {
		t.Fatal("a view was handed out twice")
	}

	d = newDoc()
	d.setField("data", map[string]string{"k": "changed"})
	if _, ok := d.bodyObject(cmKind, true); ok {
		t.Fatal("handed out after the doc's data changed")
	}
	d = newDoc()
	d.kind = "Secret"
	if d.takeView(false) != nil {
		t.Fatal("handed out after the doc's kind changed")
	}
	d = newDoc()
	if d.takeView(true) != nil {
		t.Fatal("a body's view covers no metadata, and was handed out for it")
	}

	// A view of the whole object (encodeInto's) follows metadata too.
	d = newDoc()
	d.remember(&corev1.ConfigMap{}, true)
	d.setMeta("uid", "u-2")
	if d.takeView(true) != nil {
		t.Fatal("handed out after the doc's metadata changed")
	}
	d = newDoc()
	d.remember(&corev1.ConfigMap{}, true)
	if d.takeView(true) == nil {
		t.Fatal("an unchanged doc's view was not handed out")
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
			if !bytes.Equal(created.body, got.body) {
				t.Fatalf("the create answered\n%s\nthe stored object is\n%s", describeProto(t, created.body), describeProto(t, got.body))
			}

			// An update, sent and answered in protobuf, likewise.
			obj, _, err := protobufCodec.Decode(created.body, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := objectMetaOf(obj)
			m.Labels = map[string]string{"updated": "yes"}
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
