package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// WatchOptions configure "bench watch".
type WatchOptions struct {
	Watchers int // default 10
	Writes   int // default 1000
	// WriteWorkers is how many creates run at once; default 4.
	WriteWorkers int
	// Timeout bounds the whole run; default 5 minutes.
	Timeout time.Duration
	// Progress, when set, is advanced once per write.
	Progress *Progress
}

// RunWatch opens Watchers watches on the fixture's namespace, creates
// Writes objects, and measures how long each event takes to reach every
// watcher after its write was acknowledged.
func RunWatch(ctx context.Context, t *Target, f *Fixture, opts WatchOptions) (*WatchResult, error) {
	if opts.Watchers <= 0 {
		opts.Watchers = 10
	}
	if opts.Writes <= 0 {
		opts.Writes = 1000
	}
	if opts.WriteWorkers <= 0 {
		opts.WriteWorkers = 4
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	cms := client.NewResource[*corev1.ConfigMap](t.Client, configMapsGVR).Namespace(f.Namespace)

	// Watch from the current revision: every watcher then sees every
	// write, however long it took to open.
	head, err := cms.List(ctx, wire.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("bench: watch: %w", err)
	}
	prefix := "watch-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + "-"
	recv := make([][]time.Time, opts.Watchers) // recv[w][i]: watcher w got write i
	counts := make([]int, opts.Watchers)
	watchers := make([]client.Watcher[*corev1.ConfigMap], 0, opts.Watchers)
	defer func() {
		for _, w := range watchers {
			_ = w.Close()
		}
	}()
	for range opts.Watchers {
		w, err := cms.Watch(ctx, wire.ListOptions{ResourceVersion: head.Metadata.ResourceVersion, LabelSelector: BenchLabel})
		if err != nil {
			return nil, fmt.Errorf("bench: opening watch: %w", err)
		}
		watchers = append(watchers, w)
	}

	cpuBefore, scope := serverCPU(t)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, opts.Watchers)
	for wi, w := range watchers {
		recv[wi] = make([]time.Time, opts.Writes)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[wi] = drainWatch(w, prefix, recv[wi], &counts[wi])
		}()
	}
	acks := make([]time.Time, opts.Writes)
	writeErr := parallel(ctx, opts.WriteWorkers, 0, opts.Writes, func(ctx context.Context, i int) error {
		_, err := cms.Create(ctx, newConfigMap(f.Namespace, prefix+strconv.Itoa(i)))
		acks[i] = time.Now()
		opts.Progress.Add(1)
		return err
	})
	opts.Progress.Finish()
	if writeErr != nil {
		cancel()
		for _, w := range watchers {
			_ = w.Close()
		}
	}
	wg.Wait()
	end := time.Now()
	if writeErr != nil {
		return nil, fmt.Errorf("bench: watch writes: %w", writeErr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("bench: watchers: %w", err)
	}
	cpuAfter, _ := serverCPU(t)

	res := &WatchResult{Namespace: f.Namespace, Watchers: opts.Watchers, Writes: opts.Writes, ServerCPUScope: scope}
	var lags []time.Duration
	for wi := range watchers {
		res.Delivered += counts[wi]
		for i, at := range recv[wi] {
			if at.IsZero() {
				continue
			}
			lags = append(lags, max(at.Sub(acks[i]), 0))
			end = later(end, at)
		}
	}
	res.Lag = Summarize(lags)
	res.DurationMs = ms(end.Sub(start))
	if scope != "" {
		res.ServerCPUMs = ms(cpuAfter - cpuBefore)
	}
	return res, nil
}

// drainWatch reads w until it has seen every write (an ADDED event for
// each name with prefix), recording when each arrived.
func drainWatch(w client.Watcher[*corev1.ConfigMap], prefix string, recv []time.Time, count *int) error {
	for *count < len(recv) {
		ev, err := w.Next()
		if err != nil {
			return fmt.Errorf("after %d of %d events: %w", *count, len(recv), err)
		}
		now := time.Now()
		if ev.Type != wire.Added || ev.Object == nil {
			continue
		}
		rest, ok := strings.CutPrefix(ev.Object.GetName(), prefix)
		if !ok {
			continue
		}
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= len(recv) || !recv[i].IsZero() {
			continue
		}
		recv[i] = now
		*count++
	}
	return nil
}

// serverCPU reads the server's CPU time so far and says what it covers.
func serverCPU(t *Target) (time.Duration, string) {
	switch {
	case t.Info.Embedded:
		d, err := cpuTime(0)
		if err == nil {
			return d, "process"
		}
	case t.ServerPID > 0:
		d, err := cpuTime(t.ServerPID)
		if err != nil {
			return 0, ""
		}
		if t.StorePID <= 0 {
			return d, "pid"
		}
		s, err := cpuTime(t.StorePID)
		if err != nil {
			return 0, ""
		}
		return d + s, "pid+store"
	}
	return 0, ""
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
