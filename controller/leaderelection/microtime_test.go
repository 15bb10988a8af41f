package leaderelection

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMicroTimeWireFormat(t *testing.T) {
	ts := time.Date(2026, 11, 30, 10, 4, 5, 123456789, time.FixedZone("X", 3600))
	b, err := json.Marshal(NewMicroTime(ts))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `"2026-11-30T09:04:05.123456Z"`; got != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
	if b, _ := json.Marshal(MicroTime{}); string(b) != "null" {
		t.Fatalf("zero MicroTime = %s, want null", b)
	}
	var m MicroTime
	if err := json.Unmarshal([]byte(`"not a time"`), &m); !errors.Is(err, ErrInvalidMicroTime) {
		t.Fatalf("bad input: %v, want ErrInvalidMicroTime", err)
	}
}

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
	var ours Lease
	if err := json.Unmarshal(b, &ours); err != nil {
		t.Fatal(err)
	}
	want := LeaseSpec{HolderIdentity: holder, LeaseDurationSeconds: dur, LeaseTransitions: trans,
		AcquireTime: NewMicroTime(now.Add(-time.Minute)), RenewTime: NewMicroTime(now)}
	if !ours.Spec.equal(want) || ours.GetName() != "lock" || ours.GetNamespace() != "kube-system" || ours.GetResourceVersion() != "42" {
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

// FuzzMicroTimeUnmarshal: any accepted input re-encodes to a fixed point
// that decodes to the same instant, truncated to the microsecond.
func FuzzMicroTimeUnmarshal(f *testing.F) {
	for _, s := range []string{
		`"2026-11-30T09:04:05.123456Z"`, `"2026-11-30T09:04:05Z"`, `"2026-11-30T09:04:05.123456789+05:30"`,
		`null`, `"0000-01-01T00:00:00.000000Z"`, `"9999-12-31T23:59:59.999999-01:00"`, `"x"`, `12`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m MicroTime
		if err := json.Unmarshal(data, &m); err != nil {
			return
		}
		if m.Nanosecond()%1000 != 0 {
			t.Fatalf("decoded %v keeps sub-microsecond digits", m.Time)
		}
		b1, err := json.Marshal(m)
		if err != nil {
			if !errors.Is(err, ErrInvalidMicroTime) {
				t.Fatalf("Marshal(%v): %v", m.Time, err)
			}
			return // a year Kubernetes cannot write either
		}
		var m2 MicroTime
		if err := json.Unmarshal(b1, &m2); err != nil {
			t.Fatalf("re-decoding our own %s: %v", b1, err)
		}
		if !m2.Equal(m.Time) {
			t.Fatalf("round trip changed %v to %v", m.Time, m2.Time)
		}
		b2, _ := json.Marshal(m2)
		if string(b1) != string(b2) {
			t.Fatalf("encoding not a fixed point: %s then %s", b1, b2)
		}
	})
}
