package server

import (
	"encoding/json"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
)

// FuzzAPIServiceDecoders: the controller's readers of stored CRDs and
// APIServices never panic on any value, and a CRD yields exactly its
// served versions.
func FuzzAPIServiceDecoders(f *testing.F) {
	f.Add([]byte(`{"spec":{"group":"example.com","versions":[{"name":"v1","served":true},{"name":"v2","served":false}]}}`))
	f.Add([]byte(`{"spec":{"group":"g","versions":null}}`))
	f.Add([]byte(`{"metadata":{"name":"v1.g","labels":{"kube-aggregator.kubernetes.io/automanaged":"true"}},"spec":{"service":{"name":"s"}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		gvs := crdGroupVersions(b)
		var crd struct {
			Spec struct {
				Group    string `json:"group"`
				Versions []struct {
					Name   string `json:"name"`
					Served bool   `json:"served"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if json.Unmarshal(b, &crd) == nil {
			n := 0
			for _, v := range crd.Spec.Versions {
				if v.Served {
					if gvs[n].Group != crd.Spec.Group || gvs[n].Version != v.Name {
						t.Fatalf("%s: %v", b, gvs)
					}
					n++
				}
			}
			if n != len(gvs) {
				t.Fatalf("%s: %v", b, gvs)
			}
		} else if gvs != nil {
			t.Fatalf("%s: %v from an invalid CRD", b, gvs)
		}
		if o, ok := decodeAPIService(storage.KV{Value: b, Revision: 1}); ok {
			_ = managedBy(&o.obj)
		}
	})
}
