package informer

import (
	"strconv"
	"testing"
)

// FuzzNewerRV checks the resourceVersion order: integers compare as
// integers (strict, antisymmetric), anything else is accepted as newer.
func FuzzNewerRV(f *testing.F) {
	for _, s := range [][2]string{{"1", "2"}, {"10", "9"}, {"5", "5"}, {"", "3"}, {"abc", "3"}, {"18446744073709551615", "1"}, {"007", "7"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		x, errA := strconv.ParseUint(a, 10, 64)
		y, errB := strconv.ParseUint(b, 10, 64)
		got := newerRV(a, b)
		switch {
		case b == "":
			if !got {
				t.Fatalf("newerRV(%q, \"\") = false; nothing seen yet must accept", a)
			}
		case errA != nil || errB != nil:
			if !got {
				t.Fatalf("newerRV(%q, %q) = false for an opaque RV", a, b)
			}
		default:
			if got != (x > y) {
				t.Fatalf("newerRV(%q, %q) = %v", a, b, got)
			}
			if got && newerRV(b, a) {
				t.Fatalf("both %q and %q newer than the other", a, b)
			}
		}
	})
}
