package client_test

import (
	"net/http"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/internal/testbodies"
)

// TestDecodeObjectLikeClientGoProperty: whatever the spelling of metadata
// keys, a typed Get reads the same metadata as client-go's case-sensitive
// decoder (sigs.k8s.io/json) does from the same body. (The library's own
// FuzzDecodeObjectMeta checks its decoder against a case-sensitive
// decoder written for the test.)
func TestDecodeObjectLikeClientGoProperty(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	bodies := make(chan []byte, 1)
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(<-bodies)
	}))
	r := client.NewResource[*corev1.Pod](newTestClient(t, srv, nil), pods).Namespace("ns").JSONOnly()
	ctx := ctxT(t)
	for seed := range uint64(n) {
		data := testbodies.HostilePod(seed)
		var want corev1.Pod
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &want); err != nil {
			continue // not a pod to client-go either
		}
		bodies <- data
		got, err := r.Get(ctx, "p")
		if err != nil {
			t.Fatalf("Get of %s: %v", data, err)
		}
		g, w := got.ObjectMeta, want.ObjectMeta
		if g.Name != w.Name || g.Namespace != w.Namespace || g.UID != w.UID || g.ResourceVersion != w.ResourceVersion ||
			g.GenerateName != w.GenerateName || !reflect.DeepEqual(g.DeletionTimestamp, w.DeletionTimestamp) ||
			!reflect.DeepEqual(g.Labels, w.Labels) || !reflect.DeepEqual(g.OwnerReferences, w.OwnerReferences) {
			t.Fatalf("decoding %s\ngot  %+v\nwant %+v", data, g, w)
		}
	}
}
