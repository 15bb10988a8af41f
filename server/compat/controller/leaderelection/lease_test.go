package leaderelection_test

import (
	"encoding/json"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/controller/leaderelection"
)

// TestLeaseMatchesKubernetesJSON round-trips a Lease through k8s.io/api's
// coordination/v1 type in both directions.
func TestLeaseMatchesKubernetesJSON(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 123456000, time.UTC)
	holder, dur, trans := "pod-a", int32(15), int32(3)
	theirs := coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: "lock", Namespace: "kube-system", ResourceVersion: "42"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &holder, LeaseDurationSeconds: &dur, LeaseTransitions: &trans,
			AcquireTime: &metav1.MicroTime{Time: now.Add(-time.Minute)}, RenewTime: &metav1.MicroTime{Time: now},
		},
	}
	b, err := json.Marshal(theirs)
	if err != nil {
		t.Fatal(err)
	}
	var ours leaderelection.Lease
	if err := json.Unmarshal(b, &ours); err != nil {
		t.Fatal(err)
	}
	s := ours.Spec
	if s.HolderIdentity != holder || s.LeaseDurationSeconds != dur || s.LeaseTransitions != trans ||
		!s.AcquireTime.Equal(now.Add(-time.Minute)) || !s.RenewTime.Equal(now) ||
		ours.GetName() != "lock" || ours.GetNamespace() != "kube-system" || ours.GetResourceVersion() != "42" {
		t.Fatalf("decoded %+v", ours)
	}

	back, err := json.Marshal(&ours)
	if err != nil {
		t.Fatal(err)
	}
	var again coordinationv1.Lease
	if err := json.Unmarshal(back, &again); err != nil {
		t.Fatal(err)
	}
	if *again.Spec.HolderIdentity != holder || !again.Spec.RenewTime.Time.Equal(now) ||
		*again.Spec.LeaseTransitions != trans || again.Kind != "Lease" {
		t.Fatalf("client-go decoded our lease as %+v", again.Spec)
	}
}
