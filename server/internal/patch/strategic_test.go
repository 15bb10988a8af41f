package patch

import (
	"errors"
	"testing"
)

func TestStrategicMergePatch(t *testing.T) {
	pod, _ := SchemaFor("", "Pod")
	tests := []struct {
		name, doc, patch, want string
		err                    error
	}{
		{"scalar replace and null delete",
			`{"metadata":{"name":"p","labels":{"a":"1","b":"2"}}}`,
			`{"metadata":{"labels":{"a":"x","b":null,"c":"3"}}}`,
			`{"metadata":{"name":"p","labels":{"a":"x","c":"3"}}}`, nil},
		{"merge list by key, new element leads",
			`{"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"2"}]}}`,
			`{"spec":{"containers":[{"name":"b","image":"3"},{"name":"c","image":"4"}]}}`,
			`{"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"3"},{"name":"c","image":"4"}]}}`, nil},
		{"nested merge list (env by name)",
			`{"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"},{"name":"Y","value":"2"}]}]}}`,
			`{"spec":{"containers":[{"name":"a","env":[{"name":"Y","value":"3"}]}]}}`,
			`{"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"},{"name":"Y","value":"3"}]}]}}`, nil},
		{"list without strategy is replaced",
			`{"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}}`,
			`{"spec":{"tolerations":[{"key":"c"}]}}`,
			`{"spec":{"tolerations":[{"key":"c"}]}}`, nil},
		{"primitive merge list is unioned",
			`{"metadata":{"finalizers":["a","b"]}}`,
			`{"metadata":{"finalizers":["b","c"]}}`,
			`{"metadata":{"finalizers":["a","b","c"]}}`, nil},
		{"$patch delete in list",
			`{"spec":{"containers":[{"name":"a"},{"name":"b"}]}}`,
			`{"spec":{"containers":[{"name":"a","$patch":"delete"}]}}`,
			`{"spec":{"containers":[{"name":"b"}]}}`, nil},
		{"$patch replace in list",
			`{"spec":{"containers":[{"name":"a"},{"name":"b"}]}}`,
			`{"spec":{"containers":[{"name":"c"},{"$patch":"replace"}]}}`,
			`{"spec":{"containers":[{"name":"c"}]}}`, nil},
		{"$patch merge in list is the default",
			`{"spec":{"containers":[{"name":"a"}]}}`,
			`{"spec":{"containers":[{"name":"b"},{"$patch":"merge"}]}}`,
			`{"spec":{"containers":[{"name":"b"},{"name":"a"}]}}`, nil},
		{"$patch replace on map",
			`{"metadata":{"labels":{"a":"1","b":"2"}}}`,
			`{"metadata":{"labels":{"$patch":"replace","c":"3"}}}`,
			`{"metadata":{"labels":{"c":"3"}}}`, nil},
		{"$patch delete on present map leaves it empty",
			`{"metadata":{"labels":{"a":"1"}}}`,
			`{"metadata":{"labels":{"$patch":"delete"}}}`,
			`{"metadata":{"labels":{}}}`, nil},
		{"$patch delete on absent map adds nothing",
			`{"metadata":{}}`,
			`{"metadata":{"labels":{"$patch":"delete"}}}`,
			`{"metadata":{}}`, nil},
		{"$patch merge on map",
			`{"metadata":{"labels":{"a":"1"}}}`,
			`{"metadata":{"labels":{"$patch":"merge","b":"2"}}}`,
			`{"metadata":{"labels":{"a":"1","b":"2"}}}`, nil},
		{"$retainKeys clears unlisted fields",
			`{"spec":{"volumes":[{"name":"v","hostPath":{"path":"/x"}}]}}`,
			`{"spec":{"volumes":[{"name":"v","emptyDir":{},"$retainKeys":["emptyDir","name"]}]}}`,
			`{"spec":{"volumes":[{"name":"v","emptyDir":{}}]}}`, nil},
		{"$retainKeys refuses unlisted patch fields",
			`{"spec":{}}`, `{"spec":{"$retainKeys":["a"],"b":1}}`, ``, ErrInvalidPatch},
		{"$deleteFromPrimitiveList",
			`{"metadata":{"finalizers":["a","b","c"]}}`,
			`{"metadata":{"$deleteFromPrimitiveList/finalizers":["b"]}}`,
			`{"metadata":{"finalizers":["a","c"]}}`, nil},
		{"$deleteFromPrimitiveList on missing list",
			`{"metadata":{}}`,
			`{"metadata":{"$deleteFromPrimitiveList/finalizers":["b"]}}`,
			`{"metadata":{}}`, nil},
		{"$setElementOrder orders merged list",
			`{"spec":{"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]}}`,
			`{"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"a"},{"name":"b"}],"containers":[{"name":"c","image":"x"}]}}`,
			`{"spec":{"containers":[{"name":"c","image":"x"},{"name":"a"},{"name":"b"}]}}`, nil},
		{"$setElementOrder for primitives",
			`{"metadata":{"finalizers":["a","b"]}}`,
			`{"metadata":{"$setElementOrder/finalizers":["b","a"]}}`,
			`{"metadata":{"finalizers":["b","a"]}}`, nil},
		{"$setElementOrder must cover the patch list",
			`{"spec":{"containers":[{"name":"a"}]}}`,
			`{"spec":{"$setElementOrder/containers":[{"name":"a"}],"containers":[{"name":"b"}]}}`,
			``, ErrInvalidPatch},
		{"directives never reach an absent subtree's result",
			`{}`,
			`{"spec":{"$setElementOrder/containers":[{"name":"a"}],"containers":[{"name":"a","env":[{"name":"X","$patch":"delete"}]}]}}`,
			`{"spec":{"containers":[{"name":"a","env":[]}]}}`, nil},
		{"ownerReferences merge by uid",
			`{"metadata":{"ownerReferences":[{"uid":"1","name":"a"}]}}`,
			`{"metadata":{"ownerReferences":[{"uid":"2","name":"b"}]}}`,
			`{"metadata":{"ownerReferences":[{"uid":"2","name":"b"},{"uid":"1","name":"a"}]}}`, nil},
		{"kubectl apply style patch",
			`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"spec":{"containers":[{"name":"a","image":"1","ports":[{"containerPort":80}]}]}}`,
			`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"x\":1}"}},"spec":{"$setElementOrder/containers":[{"name":"a"}],"containers":[{"$setElementOrder/ports":[{"containerPort":80},{"containerPort":443}],"image":"2","name":"a","ports":[{"containerPort":443}]}]}}`,
			`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"x\":1}"}},"spec":{"containers":[{"name":"a","image":"2","ports":[{"containerPort":80},{"containerPort":443}]}]}}`, nil},
		{"numbers survive", `{"spec":{"n":10000000000000001}}`, `{"spec":{"m":1.50}}`, `{"spec":{"n":10000000000000001,"m":1.50}}`, nil},
		{"unknown $patch", `{}`, `{"a":{"$patch":"frob"}}`, ``, ErrInvalidPatch},
		{"list element without merge key", `{"spec":{"containers":[{"name":"a"}]}}`, `{"spec":{"containers":[{"image":"x"}]}}`, ``, ErrInvalidPatch},
		{"list of lists", `{"metadata":{"finalizers":[["a"]]}}`, `{"metadata":{"finalizers":[["b"]]}}`, ``, ErrInvalidPatch},
		{"malformed directive key", `{}`, `{"$setElementOrder":[1]}`, ``, ErrInvalidPatch},
		{"non-object patch", `{}`, `[1]`, ``, ErrInvalidPatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StrategicMergePatch([]byte(tt.doc), []byte(tt.patch), pod)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !sameJSON(t, got, []byte(tt.want)) {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestStrategicMergePatchNilSchemaReplacesLists(t *testing.T) {
	got, err := StrategicMergePatch([]byte(`{"spec":{"containers":[{"name":"a"}]}}`), []byte(`{"spec":{"containers":[{"name":"b"}]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"spec":{"containers":[{"name":"b"}]}}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestSchemaFor(t *testing.T) {
	for _, gk := range [][2]string{{"", "Pod"}, {"", "Service"}, {"", "ServiceAccount"}, {"", "ConfigMap"}, {"", "Secret"}, {"", "Namespace"}, {"", "Event"}, {"coordination.k8s.io", "Lease"}, {"apiextensions.k8s.io", "CustomResourceDefinition"}} {
		if _, ok := SchemaFor(gk[0], gk[1]); !ok {
			t.Errorf("SchemaFor(%q, %q) = false", gk[0], gk[1])
		}
	}
	if _, ok := SchemaFor("example.com", "Widget"); ok {
		t.Error("SchemaFor of a custom resource should be false")
	}
}
