package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
)

// InformerOptions configure "bench informer".
type InformerOptions struct {
	// Sizes are the object counts to measure at, ascending; the fixture
	// grows between them.
	Sizes []int
	// Impls to run; default Impls.
	Impls []string
	// Updates is the burst applied after each sync, capped at the object
	// count: 0 means the default 1000, a negative count none.
	Updates int
	// UpdateWorkers is how many patches run at once; default 16.
	UpdateWorkers int
	// ChildCommand is the argv that runs one child, to which
	// ChildOptions.Args are appended: for the listwatch binary,
	// {os.Executable(), "bench", "informer-child"}. ChildEnv is added to
	// the child's environment.
	ChildCommand []string
	ChildEnv     []string
	// Relist makes each child force one relist after the burst and
	// measure memory during it (InformerRun's Relist fields).
	Relist bool
	// Replay also runs each implementation against a replay of what the
	// server sent it (see replayServer): a server that does nothing but
	// write, so the sync measured there is about the client's own cost.
	// Those runs are named impl+ReplaySuffix and have no update burst.
	Replay bool
	// ChildTimeout bounds each child; default 10 minutes.
	ChildTimeout time.Duration
	// Log receives one line per finished child; nil: none.
	Log io.Writer
}

// RunInformer measures every implementation at every size, each in its
// own child process. The fixture must be prepared; it grows to each size.
func RunInformer(ctx context.Context, t *Target, f *Fixture, opts InformerOptions) (*InformerResult, error) {
	if len(opts.ChildCommand) == 0 {
		return nil, fmt.Errorf("bench: informer: no child command")
	}
	if len(opts.Impls) == 0 {
		opts.Impls = Impls
	}
	switch {
	case opts.Updates == 0:
		opts.Updates = 1000
	case opts.Updates < 0:
		opts.Updates = 0
	}
	if opts.UpdateWorkers <= 0 {
		opts.UpdateWorkers = 16
	}
	if opts.ChildTimeout <= 0 {
		opts.ChildTimeout = 10 * time.Minute
	}
	sizes := slices.Clone(opts.Sizes)
	slices.Sort(sizes)
	res := &InformerResult{Namespace: f.Namespace}
	// A burst's value names the run and the burst: on a fixture kept from
	// an earlier run (--keep) a value it already holds would change
	// nothing, and a patch that changes nothing makes no event.
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	burst := 0
	for _, n := range sizes {
		if err := f.Grow(ctx, n); err != nil {
			return nil, err
		}
		if t.Client != nil {
			if err := warmServer(ctx, t.Client, f); err != nil {
				return nil, err
			}
		}
		for _, impl := range opts.Impls {
			burst++
			run, err := runChild(ctx, t, f, opts, impl, n, runID+"-"+strconv.Itoa(burst))
			if err != nil {
				return nil, err
			}
			if opts.Log != nil {
				fmt.Fprintf(opts.Log, "informer %s %s N=%d: sync %.0f ms, heap %s, peak RSS %s, %.0f events/s\n",
					impl, run.Fixture, n, run.SyncMs, humanBytes(run.HeapAfterSyncBytes), humanBytes(run.PeakRSSBytes), run.EventsPerSec)
				if opts.Relist && run.RelistMs > 0 {
					fmt.Fprintf(opts.Log, "informer %s %s N=%d: relist %.0f ms, steady heap %s, peak heap %s (%.2fx), peak live heap %s (%.2fx), peak RSS %s, %d GCs\n",
						impl, run.Fixture, n, run.RelistMs, humanBytes(run.HeapBeforeRelistBytes),
						humanBytes(run.RelistPeakHeapBytes), ratio(run.RelistPeakHeapBytes, run.HeapBeforeRelistBytes),
						humanBytes(run.RelistPeakLiveHeapBytes), ratio(run.RelistPeakLiveHeapBytes, run.HeapBeforeRelistBytes),
						humanBytes(run.RelistPeakRSSBytes), run.RelistGCs)
				}
			}
			res.Runs = append(res.Runs, run)
			if opts.Replay {
				burst++
				run, err := runReplayed(ctx, t, f, opts, impl, n, runID+"-"+strconv.Itoa(burst))
				if err != nil {
					return nil, err
				}
				if opts.Log != nil {
					fmt.Fprintf(opts.Log, "informer %s %s N=%d: sync %.0f ms, heap %s, peak RSS %s (%d requests not recorded)\n",
						run.Impl, run.Fixture, n, run.SyncMs, humanBytes(run.HeapAfterSyncBytes), humanBytes(run.PeakRSSBytes), run.ReplayMisses)
				}
				res.Runs = append(res.Runs, run)
			}
		}
	}
	return res, nil
}

// ReplaySuffix ends the name of a run against a replay (InformerOptions.Replay).
const ReplaySuffix = "@replay"

// runReplayed runs impl once through a recording proxy to t's server,
// then again against the recording, and returns the second run.
func runReplayed(ctx context.Context, t *Target, f *Fixture, opts InformerOptions, impl string, n int, burst string) (InformerRun, error) {
	rs, err := newReplayServer(t.KubeconfigPath, t.Context)
	if err != nil {
		return InformerRun{}, err
	}
	defer rs.Close()
	rt := *t
	rt.KubeconfigPath, rt.Context = rs.kubeconfig, ""
	// The burst's writes would reach the real server, not the replay;
	// a relist would be the list replayed again.
	opts.Updates, opts.Relist = 0, false
	if _, err := runChild(ctx, &rt, f, opts, impl, n, burst+"-record"); err != nil {
		return InformerRun{}, err
	}
	rs.Replay()
	run, err := runChild(ctx, &rt, f, opts, impl, n, burst)
	if err != nil {
		return InformerRun{}, err
	}
	run.Impl += ReplaySuffix
	run.ReplayMisses = rs.Misses()
	return run, nil
}

// runChild starts one child, waits for it to sync, applies the update
// burst, and reads its report.
func runChild(ctx context.Context, t *Target, f *Fixture, opts InformerOptions, impl string, n int, burst string) (InformerRun, error) {
	updates := min(opts.Updates, n)
	co := ChildOptions{
		Kubeconfig: t.KubeconfigPath, Context: t.Context, Namespace: f.Namespace,
		Impl: impl, Objects: n, Updates: updates, Timeout: opts.ChildTimeout,
		Resource: f.Resource(), Relist: opts.Relist,
	}
	ctx, cancel := context.WithTimeout(ctx, opts.ChildTimeout+30*time.Second)
	defer cancel()
	argv := append(slices.Clone(opts.ChildCommand), co.Args()...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(cmd.Environ(), opts.ChildEnv...), implEnv[impl]...)
	var stderr tailBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return InformerRun{}, err
	}
	if err := cmd.Start(); err != nil {
		return InformerRun{}, fmt.Errorf("%w: %s: %w", ErrChild, impl, err)
	}
	fail := func(err error) (InformerRun, error) {
		cancel()
		_ = cmd.Wait()
		return InformerRun{}, fmt.Errorf("%w: %s N=%d: %w\n%s", ErrChild, impl, n, err, stderr.String())
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	if !lines.Scan() || lines.Text() != childSyncedLine {
		return fail(fmt.Errorf("no %q line (got %q, %v)", childSyncedLine, lines.Text(), lines.Err()))
	}

	burstStart := time.Now()
	if err := patchBurst(ctx, t.Client, f, updates, opts.UpdateWorkers, burst); err != nil {
		return fail(err)
	}
	writeTook := time.Since(burstStart)

	if !lines.Scan() {
		return fail(fmt.Errorf("no report line: %v", lines.Err()))
	}
	var rep childReport
	if err := json.Unmarshal(lines.Bytes(), &rep); err != nil {
		return fail(fmt.Errorf("decoding report %q: %w", lines.Text(), err))
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return InformerRun{}, fmt.Errorf("%w: %s N=%d: %w\n%s", ErrChild, impl, n, err, stderr.String())
	}
	run := rep.InformerRun
	run.Fixture = f.Resource()
	if run.Listed != n {
		return InformerRun{}, fmt.Errorf("%w: %s synced with %d objects, expected %d: does namespace %s hold objects other than bench's?",
			ErrChild, impl, run.Listed, n, f.Namespace)
	}
	run.WriteMs = ms(writeTook)
	if updates > 0 && rep.LastUpdateUnixNano > 0 {
		if d := time.Duration(rep.LastUpdateUnixNano - burstStart.UnixNano()); d > 0 {
			run.EventsPerSec = float64(updates) / d.Seconds()
		}
	}
	return run, nil
}

// patchBurst changes the first n bench objects with merge patches: a
// ConfigMap's data, a pod's annotation, to burst, which differs per burst:
// a patch that changes nothing produces no event on kube-apiserver.
func patchBurst(ctx context.Context, c *client.Client, f *Fixture, n, workers int, burst string) error {
	objs := client.NewResource[*object.Unstructured](c, f.gvr()).Namespace(f.Namespace)
	body := fmt.Appendf(nil, `{"data":{"burst":%q}}`, burst)
	if f.Kind == FixturePods {
		body = fmt.Appendf(nil, `{"metadata":{"annotations":{"listwatch.io/bench-burst":%q}}}`, burst)
	}
	return parallel(ctx, workers, 0, n, func(ctx context.Context, i int) error {
		_, err := objs.Patch(ctx, ObjectName(i), client.MergePatch, body)
		if err != nil {
			return fmt.Errorf("bench: patching %s: %w", ObjectName(i), err)
		}
		return nil
	})
}

// tailBuffer keeps the last 8 KiB written to it: a child's stderr, shown
// when it fails.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if extra := b.buf.Len() - 8<<10; extra > 0 {
		b.buf.Next(extra)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
