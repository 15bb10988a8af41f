package bench

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := Summarize(ds)
	if l.Count != 100 || l.P50Ms != 50 || l.P90Ms != 90 || l.P99Ms != 99 || l.MaxMs != 100 || l.MeanMs != 50.5 {
		t.Fatalf("Summarize = %+v", l)
	}
	if ds[0] != 100*time.Millisecond {
		t.Fatal("Summarize sorted its argument")
	}
	if one := Summarize([]time.Duration{time.Millisecond}); one.P50Ms != 1 || one.P99Ms != 1 {
		t.Fatalf("one sample: %+v", one)
	}
	if (Summarize(nil) != Latency{}) {
		t.Fatal("empty sample is not zero")
	}
}
