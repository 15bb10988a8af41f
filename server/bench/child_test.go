package bench

import (
	"reflect"
	"testing"
	"time"
)

func TestChildArgsRoundTrip(t *testing.T) {
	o := ChildOptions{Kubeconfig: "/tmp/k c", Context: "ctx=1", Namespace: "ns", Impl: ImplSeedFactory,
		Objects: 100000, Updates: 1000, Timeout: 90 * time.Second, Resource: FixturePods, Relist: true}
	got, err := ParseChildArgs(o.Args())
	if err != nil || !reflect.DeepEqual(got, o) {
		t.Fatalf("ParseChildArgs(Args()) = %+v, %v; want %+v", got, err, o)
	}
	if _, err := ParseChildArgs([]string{"--objects=many"}); err == nil {
		t.Fatal("bad --objects accepted")
	}
}

// FuzzChildArgs: any options survive the trip through argv.
func FuzzChildArgs(f *testing.F) {
	f.Add("/k", "", "default", ImplListwatchTyped, 10, 5, int64(time.Minute), "pods", true)
	f.Add("", "a=b", "--x", "", -1, 0, int64(0), "", false)
	f.Fuzz(func(t *testing.T, kc, ctx, ns, impl string, objects, updates int, timeout int64, resource string, relist bool) {
		o := ChildOptions{Kubeconfig: kc, Context: ctx, Namespace: ns, Impl: impl, Objects: objects, Updates: updates,
			Timeout: time.Duration(timeout), Resource: resource, Relist: relist}
		got, err := ParseChildArgs(o.Args())
		if err != nil {
			t.Fatalf("ParseChildArgs(%q): %v", o.Args(), err)
		}
		if !reflect.DeepEqual(got, o) {
			t.Fatalf("round trip: got %+v, want %+v", got, o)
		}
	})
}
