package apiservertest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/apiserver"
)

// BenchmarkServerStart reports the time from Run to Ready of a server on
// a fresh data dir (embedded etcd, RBAC bootstrap policy, flowcontrol
// objects, caches, admission informers) as ns/op, and when each start
// phase ended (the server's "start phase done" debug records) as
// ms-<phase> metrics, averaged over the runs.
func BenchmarkServerStart(b *testing.B) {
	phases := &phaseLog{sum: map[string]time.Duration{}}
	runs := 0
	for b.Loop() {
		s := Start(b, b.TempDir(), func(o *apiserver.Options) { o.Logger = slog.New(phases) })
		b.StopTimer()
		s.Stop()
		runs++
		b.StartTimer()
	}
	phases.mu.Lock()
	defer phases.mu.Unlock()
	for name, d := range phases.sum {
		b.ReportMetric(float64(d.Milliseconds())/float64(runs), "ms-"+strings.ReplaceAll(name, " ", "-"))
	}
}

// phaseLog is a slog.Handler that sums the sinceStart of the server's
// "start phase done" records by phase, and drops every other record.
type phaseLog struct {
	mu  sync.Mutex
	sum map[string]time.Duration
}

func (h *phaseLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *phaseLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *phaseLog) WithGroup(string) slog.Handler            { return h }

func (h *phaseLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "start phase done" {
		return nil
	}
	var name string
	var d time.Duration
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "phase":
			name = a.Value.String()
		case "sinceStart":
			d = a.Value.Duration()
		}
		return true
	})
	h.mu.Lock()
	h.sum[name] += d
	h.mu.Unlock()
	return nil
}
