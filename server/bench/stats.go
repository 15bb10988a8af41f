package bench

import (
	"slices"
	"time"
)

// Latency summarises a sample of durations, in milliseconds so that the
// JSON stays readable and plots need no unit conversion.
type Latency struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// MeanMs is the arithmetic mean; with few samples p99 equals max.
	MeanMs float64 `json:"meanMs"`
}

// Summarize computes the nearest-rank percentiles of ds. It sorts a copy;
// ds is left as it was. An empty sample gives the zero Latency.
func Summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Latency{
		Count:  len(s),
		P50Ms:  ms(percentile(s, 50)),
		P90Ms:  ms(percentile(s, 90)),
		P99Ms:  ms(percentile(s, 99)),
		MaxMs:  ms(s[len(s)-1]),
		MeanMs: ms(sum / time.Duration(len(s))),
	}
}

// percentile is the nearest-rank percentile of the sorted, non-empty s:
// the smallest value with at least p% of the sample at or below it.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
