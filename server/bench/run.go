package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"
)

// Options select the benchmarks of one run and the server they measure.
// A nil section is skipped.
type Options struct {
	Target TargetOptions
	// Namespace for bench objects; default "listwatch-bench".
	Namespace string
	// UseExisting lists the objects already in Namespace instead of
	// creating any; only the list benchmark supports it.
	UseExisting bool
	// Keep leaves the namespace and objects behind.
	Keep bool
	// Objects are the object counts: list uses the largest, informer
	// measures at each. Default 1000.
	Objects []int
	// CreateWorkers is how many creates run at once; default 16.
	CreateWorkers int
	// Fixture is the kind of objects to create: FixtureConfigMaps
	// (default) or FixturePods.
	Fixture string

	List     *ListOptions
	Informer *InformerOptions
	Watch    *WatchOptions
	Queue    *QueueOptions
	Write    *WriteOptions

	// Progress receives progress bars (on a terminal) or lines; nil: none.
	Progress io.Writer
}

// ErrUsage wraps invalid combinations of options.
var ErrUsage = errors.New("bench: invalid options")

// Run runs the selected benchmarks and returns their results. Objects it
// created are deleted at the end unless Keep is set; with an embedded
// server in a temporary directory the whole server goes away instead.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	if o.Namespace == "" {
		o.Namespace = "listwatch-bench"
	}
	if len(o.Objects) == 0 {
		o.Objects = []int{1000}
	}
	if o.UseExisting && (o.Informer != nil || o.Watch != nil) {
		return nil, fmt.Errorf("%w: --use-existing applies to list only", ErrUsage)
	}
	for _, n := range o.Objects {
		if n <= 0 {
			return nil, fmt.Errorf("%w: object count %d", ErrUsage, n)
		}
	}
	res = &Result{Schema: SchemaVersion, Started: time.Now().UTC().Truncate(time.Second),
		GoMaxProcs: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU()}
	progress := func(label string, total int) *Progress { return NewProgress(o.Progress, label, total) }

	if o.List != nil || o.Informer != nil || o.Watch != nil || o.Write != nil {
		t, err := Connect(ctx, o.Target)
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, t.Close()) }()
		res.Target = t.Info
		f := NewFixture(t.Client, o.Namespace)
		f.Progress = progress
		switch o.Fixture {
		case "", FixtureConfigMaps:
		case FixturePods:
			f.Kind = FixturePods
			f.UpdatePodStatus = clientGoPodStatusUpdater(t)
		default:
			return nil, fmt.Errorf("%w: fixture %q (want one of %v)", ErrUsage, o.Fixture, Fixtures)
		}
		if o.CreateWorkers > 0 {
			f.Workers = o.CreateWorkers
		}
		if !o.UseExisting {
			if err := f.Prepare(ctx); err != nil {
				return nil, err
			}
			// An embedded server in a temporary directory vanishes on
			// Close: deleting 100k objects first would only waste time.
			if !o.Keep && !(t.Info.Embedded && o.Target.DataDir == "") {
				defer func() {
					cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
					defer cancel()
					err = errors.Join(err, f.Cleanup(cctx))
				}()
			}
		}
		// The informer runs first: it measures at each size while the
		// fixture grows, which it could not do after the list benchmark
		// had created the largest.
		if o.Informer != nil {
			io := *o.Informer
			io.Sizes = o.Objects
			if res.Informer, err = RunInformer(ctx, t, f, io); err != nil {
				return nil, err
			}
		}
		if o.List != nil {
			lo := *o.List
			lo.Namespace = o.Namespace
			if lo.Resource == "" {
				lo.Resource = f.Resource() // the fixture's: configmaps or pods
			}
			if !o.UseExisting {
				if err := f.Grow(ctx, slices.Max(o.Objects)); err != nil {
					return nil, err
				}
			}
			c := t.Client
			if lo.Protobuf {
				if c, err = t.protobufClient(); err != nil {
					return nil, err
				}
			}
			if res.List, err = RunList(ctx, c, lo); err != nil {
				return nil, err
			}
		}
		if o.Watch != nil {
			wo := *o.Watch
			if wo.Writes <= 0 {
				wo.Writes = 1000
			}
			if wo.Progress == nil {
				wo.Progress = progress("watch writes", max(wo.Writes, 1))
			}
			if res.Watch, err = RunWatch(ctx, t, f, wo); err != nil {
				return nil, err
			}
		}
		if o.Write != nil {
			wo := *o.Write
			if wo.Progress == nil {
				wo.Progress = progress
			}
			if res.Write, err = RunWrite(ctx, t, f, wo); err != nil {
				return nil, err
			}
		}
	}
	if o.Queue != nil {
		if res.Queue, err = RunQueue(ctx, *o.Queue); err != nil {
			return nil, err
		}
	}
	return res, nil
}
