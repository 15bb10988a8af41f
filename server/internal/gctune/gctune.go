// Package gctune sets the garbage collector's GOGC from what the live heap
// is made of.
//
// GOGC lets the heap grow by a share of the whole live heap before the
// next collection. An API server's live heap is mostly its watch caches'
// object values: byte slices, which the collector does not scan and which
// live until their object changes. Headroom earned by those bytes buys
// fewer collections of the rest at the price of memory the process then
// keeps resident. The tuner gives the scanned part of the heap the
// headroom GOGC would give it (Base percent) and the cached values a
// smaller one (Cached percent), as one GOGC for the whole heap, set again
// after each collection.
package gctune

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Config is what the tuner aims at.
type Config struct {
	// Base is the GOGC of the heap other than the cached values.
	Base int
	// Cached is the GOGC of the cached values' bytes.
	Cached int
	// CachedBytes returns the size of the cached values now live.
	CachedBytes func() int64
	// Every is how often the tuner looks for a finished collection
	// (default 250 ms).
	Every time.Duration
}

// Percent is the GOGC that gives a live heap of live bytes, cached of
// them cached values, the headroom of c: Base percent of the rest plus
// Cached percent of the cached bytes.
func (c Config) Percent(live, cached int64) int {
	if live <= 0 {
		return c.Base
	}
	cached = min(max(cached, 0), live)
	headroom := (live-cached)*int64(c.Base) + cached*int64(c.Cached)
	return int(max(headroom/live, 1))
}

// Start sets GOGC to c.Base, then after each collection to c.Percent of
// the live heap, until stop is called; stop waits for the tuner to end and
// puts back the GOGC Start found.
func Start(c Config) (stop func()) {
	if c.Every <= 0 {
		c.Every = 250 * time.Millisecond
	}
	before := debug.SetGCPercent(c.Base)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		run(quit, c)
	}()
	return func() {
		close(quit)
		<-done
		debug.SetGCPercent(before)
	}
}

func run(quit <-chan struct{}, c Config) {
	samples := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/gogc:percent"},
	}
	var cycles uint64
	t := time.NewTicker(c.Every)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
		}
		metrics.Read(samples)
		n := samples[0].Value.Uint64()
		if n == cycles {
			continue
		}
		cycles = n
		// Set again whenever it differs, whoever changed it.
		if p := c.Percent(int64(samples[1].Value.Uint64()), c.CachedBytes()); uint64(p) != samples[2].Value.Uint64() {
			debug.SetGCPercent(p)
		}
	}
}
