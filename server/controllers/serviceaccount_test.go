package controllers_test

import (
	"maps"
	"testing"

	"github.com/listwatch/listwatch/server/controllers"
	"github.com/listwatch/listwatch/wire"
)

const rootCADescription = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."

// TestServiceAccountAndRootCA: every active namespace, old or new, gets
// the default ServiceAccount and kube-root-ca.crt (the server's CA, kube's
// annotation); both come back when deleted, and the ConfigMap when
// changed. The client goes through
// a proxy that drops connections.
func TestServiceAccountAndRootCA(t *testing.T) {
	s, admin := bare(t)
	mustCreate(t, res(admin, nsGVR), obj("v1", "Namespace", "before", nil))
	ca := string(s.Credentials().CAPEM)
	runHost(t, faulty(t, s, 0.001, 40), controllers.Config{
		Controllers: []string{"serviceaccount", "root-ca-cert-publisher"},
		RootCA:      s.Credentials().CAPEM,
	})
	mustCreate(t, res(admin, nsGVR), obj("v1", "Namespace", "after", nil))

	rootCAOK := func(cm u) bool {
		data, _ := cm.Nested("data")
		d, _ := data.(map[string]any)
		return maps.Equal(d, map[string]any{"ca.crt": ca}) && cm.GetAnnotations()["kubernetes.io/description"] == rootCADescription
	}
	exists := func(u) bool { return true }
	for _, ns := range []string{"before", "after", "default", "kube-system"} {
		waitFor(t, res(admin, saGVR).Namespace(ns), "default", exists)
		waitFor(t, res(admin, cmGVR).Namespace(ns), "kube-root-ca.crt", rootCAOK)
	}

	// Deleted: made again.
	sas, cms := res(admin, saGVR).Namespace("after"), res(admin, cmGVR).Namespace("after")
	old, _ := sas.Get(t.Context(), "default")
	if _, err := sas.Delete(t.Context(), "default", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, sas, "default", func(sa u) bool { return sa.GetUID() != old.GetUID() })
	oldCM, err := cms.Get(t.Context(), "kube-root-ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Delete(t.Context(), "kube-root-ca.crt", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The one made again, not the deleted one a lagging read may still
	// show.
	waitFor(t, cms, "kube-root-ca.crt", func(cm u) bool { return cm.GetUID() != oldCM.GetUID() && rootCAOK(cm) })

	// Changed: restored.
	cm, err := cms.Get(t.Context(), "kube-root-ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	cm.SetNested(map[string]any{"ca.crt": "forged"}, "data")
	cm.SetAnnotations(nil)
	changed, err := cms.Update(t.Context(), cm)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, cms, "kube-root-ca.crt", func(cm u) bool {
		return cm.GetResourceVersion() != changed.GetResourceVersion() && rootCAOK(cm)
	})
}
