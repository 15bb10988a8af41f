package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

// ErrStepTimeout is returned by Run when a scripted step's outcome is not
// observed within Config.StepTimeout.
var ErrStepTimeout = errors.New("demo: step did not complete in time")

// Event types passed to Config.OnEvent, as `listwatch watch` prints them.
const (
	EventAdd    = "Add"
	EventUpdate = "Update"
	EventDelete = "Delete"
)

// Config configures Run. Client is required.
type Config struct {
	Client *client.Client
	// Namespace holds the demo's ConfigMaps. Default "default".
	Namespace string
	// Name is the source ConfigMap's name. Default "demo". It must not
	// exist yet.
	Name string
	// OnEvent is told, from the informer's handler goroutine, about every
	// event on the namespace's ConfigMaps.
	OnEvent func(typ string, obj *object.Unstructured)
	// OnReconcile is told what each successful reconcile did, and
	// OnStep what the script is about to do. Both optional.
	OnReconcile func(key, action string)
	OnStep      func(step string)
	// StepTimeout bounds each step. Default 30s.
	StepTimeout time.Duration
	// Logger receives the informer's and controller's logs. Default
	// slog.Default().
	Logger *slog.Logger
}

// Summary is what Run saw.
type Summary struct {
	Events     int           // informer events delivered to the handler
	Reconciles int           // Reconcile calls, successful or not
	Errors     int           // Reconcile calls that returned an error
	Duration   time.Duration // from Run's start to its end
}

// String is the demo's last line.
func (s Summary) String() string {
	return fmt.Sprintf("demo done: %d events, %d reconciles, %d errors in %s",
		s.Events, s.Reconciles, s.Errors, s.Duration.Round(time.Millisecond))
}

// Run starts an informer on cfg.Namespace's ConfigMaps and the Mirror
// controller, plays the script (see the package doc), stops both, and
// returns what happened. It returns after every goroutine it started has
// exited.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	cms := client.NewResource[*object.Unstructured](cfg.Client, ConfigMapsGVR)
	inf, err := informer.New[*object.Unstructured](cms.Namespace(cfg.Namespace), informer.Options[*object.Unstructured]{
		Transform: informer.DropManagedFields,
		Reflector: informer.ReflectorOptions{Name: cfg.Namespace + "/configmaps", Logger: cfg.Logger},
	})
	if err != nil {
		return Summary{}, err
	}
	obs := newObserver()
	var reconciles, failures atomic.Int64
	mirror := NewMirror(cms, inf.Lister(), func(key, action string) {
		cfg.OnReconcile(key, action)
		obs.action(key, action)
	})
	counted := controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		reconciles.Add(1)
		res, err := mirror.Reconcile(ctx, key)
		if err != nil {
			failures.Add(1)
		}
		return res, err
	})
	var ctrl *controller.Controller // set before inf.Run starts the handler
	var events atomic.Int64
	seen := func(typ string, o *object.Unstructured) {
		events.Add(1)
		cfg.OnEvent(typ, o)
		obs.event(typ, object.Key(o))
	}
	reg, err := inf.AddEventHandler(informer.HandlerFuncs[*object.Unstructured]{
		AddFunc: func(o *object.Unstructured, _ bool) { seen(EventAdd, o); ctrl.Enqueue(SourceKey(o)) },
		UpdateFunc: func(_, o *object.Unstructured) {
			seen(EventUpdate, o)
			ctrl.Enqueue(SourceKey(o))
		},
		DeleteFunc: func(o *object.Unstructured, _ bool) { seen(EventDelete, o); ctrl.Enqueue(SourceKey(o)) },
	}, informer.HandlerOptions{})
	if err != nil {
		return Summary{}, err
	}
	// The registration's HasSynced: workers start once the handler has
	// enqueued every object of the first list.
	ctrl, err = controller.New(counted, controller.Options{
		Name: "mirror", HasSynced: []func() bool{reg.HasSynced}, Logger: cfg.Logger,
	})
	if err != nil {
		return Summary{}, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(runCtx) })
	wg.Go(func() { _ = ctrl.Run(runCtx) })
	err = play(runCtx, cfg, cms.Namespace(cfg.Namespace), inf, obs)
	cancel()
	wg.Wait()
	return Summary{
		Events:     int(events.Load()),
		Reconciles: int(reconciles.Load()),
		Errors:     int(failures.Load()),
		Duration:   time.Since(start),
	}, err
}

func (cfg Config) withDefaults() Config {
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.Name == "" {
		cfg.Name = "demo"
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnEvent == nil {
		cfg.OnEvent = func(string, *object.Unstructured) {}
	}
	if cfg.OnReconcile == nil {
		cfg.OnReconcile = func(string, string) {}
	}
	if cfg.OnStep == nil {
		cfg.OnStep = func(string) {}
	}
	return cfg
}
