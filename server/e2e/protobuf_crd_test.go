package e2e

import (
	"net/http"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestProtobufCRDs: the apiextensions clientset asks for protobuf for
// CustomResourceDefinitions, as kube's apiextensions server serves them;
// creates, gets, lists and watches answer in protobuf and decode whole.
func TestProtobufCRDs(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cfg := restConfig(t, s)
	ct := &contentTypes{seen: map[string]int{}}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { ct.rt = rt; return ct }
	cs := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	ctx := t.Context()

	w, err := cs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: new(true),
				}},
			}},
		},
	}
	created, err := cs.Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.Spec.Names.Kind != "Gizmo" || created.Spec.Versions[0].Schema.OpenAPIV3Schema.Type != "object" {
		t.Fatalf("created: %+v", created)
	}
	got, err := cs.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil || got.ResourceVersion == "" || got.Spec.Group != "example.com" || len(got.Status.Conditions) == 0 {
		t.Fatalf("get: %v %+v", err, got)
	}
	list, err := cs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != crd.Name {
		t.Fatalf("list: %v %+v", err, list)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*apiextensionsv1.CustomResourceDefinition).Name != crd.Name {
			t.Fatalf("watch: %v %#v", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event")
	}
	const proto = "application/vnd.kubernetes.protobuf"
	if n := ct.count(proto); n != 3 {
		t.Fatalf("%d of create, get, list answered in protobuf: %v", n, ct.seen)
	}
	if n := ct.count(proto + ";stream=watch"); n != 1 {
		t.Fatalf("watch not protobuf: %v", ct.seen)
	}
}
