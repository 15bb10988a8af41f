package bench

import (
	"encoding/json"
	"maps"
	"testing"
)

// TestPodFixtureShape: pods are 5–8 KiB of JSON, replicas of one
// ReplicaSet share labels, annotations, image and owner, and pods of
// different ReplicaSets do not.
func TestPodFixtureShape(t *testing.T) {
	for _, i := range []int{0, 1, 9, 10, 12345} {
		b, err := json.Marshal(ProductionPod("ns", i))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 5<<10 || len(b) > 8<<10 {
			t.Errorf("pod %d is %d bytes of JSON, want 5–8 KiB", i, len(b))
		}
	}
	a, b, c := ProductionPod("ns", 0), ProductionPod("ns", PodsPerReplicaSet-1), ProductionPod("ns", PodsPerReplicaSet)
	if !maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Annotations, b.Annotations) ||
		a.Spec.Containers[0].Image != b.Spec.Containers[0].Image || a.OwnerReferences[0].UID != b.OwnerReferences[0].UID {
		t.Errorf("replicas of one ReplicaSet differ in labels, annotations, image or owner")
	}
	if a.OwnerReferences[0].UID == c.OwnerReferences[0].UID || a.Labels["pod-template-hash"] == c.Labels["pod-template-hash"] {
		t.Errorf("pods of two ReplicaSets share an owner")
	}
	if a.Status.PodIP == b.Status.PodIP || a.Name == b.Name {
		t.Errorf("two pods share an IP or a name")
	}
	if len(a.ManagedFields) != 3 || len(a.Status.ContainerStatuses) != 2 || len(a.Status.Conditions) != 4 {
		t.Errorf("pod lacks managedFields, container statuses or conditions")
	}
}
