package workqueue_test

import (
	"testing"
	"testing/synctest"
	"time"

	clientgo "k8s.io/client-go/util/workqueue"

	"github.com/listwatch/listwatch/workqueue"
)

// TestDefaultControllerRateLimiterMatchesClientGo drives ours and
// client-go's default limiter through the same retries at the same (fake)
// instants and requires the same delays.
func TestDefaultControllerRateLimiterMatchesClientGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ours := workqueue.DefaultControllerRateLimiter[string]()
		theirs := clientgo.DefaultTypedControllerRateLimiter[string]()
		keys := []string{"a", "b", "c", "a", "a", "d"}
		for round := range 60 {
			for _, k := range keys {
				got, want := ours.When(k), theirs.When(k)
				if got != want {
					t.Fatalf("round %d key %s: When = %v, client-go %v", round, k, got, want)
				}
			}
			if round%7 == 0 {
				ours.Forget("b")
				theirs.Forget("b")
			}
			if ours.NumRequeues("a") != theirs.NumRequeues("a") {
				t.Fatalf("NumRequeues differ: %d vs %d", ours.NumRequeues("a"), theirs.NumRequeues("a"))
			}
			time.Sleep(37 * time.Millisecond)
		}
	})
}
