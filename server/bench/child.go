package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	cgworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

// The informer implementations "bench informer" compares. Each runs alone
// in a child process, so heap and peak RSS belong to it only.
const (
	// ImplListwatchTyped is listwatch's informer over *corev1.ConfigMap.
	ImplListwatchTyped = "listwatch-typed"
	// ImplListwatchUnstructured is listwatch's informer over
	// *object.Unstructured.
	ImplListwatchUnstructured = "listwatch-unstructured"
	// ImplClientGoTyped is client-go's SharedIndexInformer over the typed
	// clientset's List and Watch.
	ImplClientGoTyped = "client-go-typed"
	// ImplClientGoTypedPaged is ImplClientGoTyped with client-go's
	// WatchListClient feature off (KUBE_FEATURE_WatchListClient=false in
	// the child's environment): paged LIST then WATCH, as listwatch's
	// informer does by default, instead of a streaming initial list.
	ImplClientGoTypedPaged = "client-go-typed-paged"
	// ImplClientGoDynamic is client-go's dynamic informer (unstructured).
	ImplClientGoDynamic = "client-go-dynamic"
	// ImplSeedIndexer is the seed article's first style: a hand-built
	// cache.NewListWatchFromClient, cache.NewIndexerInformer and a
	// rate-limited workqueue drained by one worker.
	ImplSeedIndexer = "seed-indexer-informer"
	// ImplSeedFactory is the seed article's second style: a
	// SharedInformerFactory's ConfigMap informer.
	ImplSeedFactory = "seed-factory"
)

// Impls lists every implementation, listwatch's first.
var Impls = []string{ImplListwatchTyped, ImplListwatchUnstructured, ImplClientGoTyped, ImplClientGoTypedPaged,
	ImplClientGoDynamic, ImplSeedIndexer, ImplSeedFactory}

// implEnv is extra environment a child needs for an implementation.
var implEnv = map[string][]string{
	ImplClientGoTypedPaged: {"KUBE_FEATURE_WatchListClient=false"},
}

// ChildOptions configure one informer child process.
type ChildOptions struct {
	Kubeconfig, Context, Namespace string
	Impl                           string
	// Objects is how many objects the namespace holds (reported back).
	Objects int
	// Updates is how many update events to wait for after sync.
	Updates int
	// Timeout bounds the whole child; default 10 minutes.
	Timeout time.Duration
	// Resource is the fixture's resource: "configmaps" (default) or
	// "pods".
	Resource string
	// Relist, after the update burst, forces one relist (see relistHook)
	// and measures the heap during it.
	Relist bool
}

// Args renders o as the flags ParseChildArgs reads.
func (o ChildOptions) Args() []string {
	return []string{
		"--kubeconfig=" + o.Kubeconfig, "--context=" + o.Context, "--namespace=" + o.Namespace,
		"--impl=" + o.Impl, fmt.Sprintf("--objects=%d", o.Objects), fmt.Sprintf("--updates=%d", o.Updates),
		"--timeout=" + o.Timeout.String(), "--resource=" + o.Resource, fmt.Sprintf("--relist=%t", o.Relist),
	}
}

// ParseChildArgs parses the flags Args writes.
func ParseChildArgs(args []string) (ChildOptions, error) {
	var o ChildOptions
	fs := flag.NewFlagSet("informer-child", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&o.Context, "context", "", "")
	fs.StringVar(&o.Namespace, "namespace", "", "")
	fs.StringVar(&o.Impl, "impl", "", "")
	fs.IntVar(&o.Objects, "objects", 0, "")
	fs.IntVar(&o.Updates, "updates", 0, "")
	fs.DurationVar(&o.Timeout, "timeout", 0, "")
	fs.StringVar(&o.Resource, "resource", "", "")
	fs.BoolVar(&o.Relist, "relist", false, "")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("bench: informer child: %w", err)
	}
	return o, nil
}

// childSyncedLine is what a child prints once synced; the parent then
// applies the update burst.
const childSyncedLine = "synced"

// childReport is the child's final JSON line.
type childReport struct {
	InformerRun
	// LastUpdateUnixNano is the wall-clock time the last awaited update
	// was seen; the parent, on the same machine, subtracts its burst
	// start from it.
	LastUpdateUnixNano int64 `json:"lastUpdateUnixNano"`
}

// probe is what an implementation gives the measuring code: a way to run
// it and to ask whether it has synced. Handlers call seen for every
// update event.
type probe struct {
	run    func(ctx context.Context)
	synced func() bool
	// relist, if set, can force a relist (see relistHook).
	relist *relistHook
}

// RunInformerChild runs one implementation: start, wait for sync,
// measure memory, print childSyncedLine, wait for o.Updates update
// events, print one JSON line (childReport) to out.
func RunInformerChild(ctx context.Context, o ChildOptions, out io.Writer) error {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	var adds, updates atomic.Int64
	added := func() { adds.Add(1) }
	allSeen := make(chan struct{})
	var lastSeen atomic.Int64
	seen := func() {
		if n := updates.Add(1); n == int64(o.Updates) {
			lastSeen.Store(time.Now().UnixNano())
			close(allSeen)
		}
	}
	if o.Resource == "" {
		o.Resource = FixtureConfigMaps
	}
	p, err := newProbe(o, added, seen)
	if err != nil {
		return err
	}
	rep := childReport{InformerRun: InformerRun{Impl: o.Impl, Objects: o.Objects, Updates: o.Updates}}

	stopCPUProfile, err := startCPUProfile(os.Getenv("LISTWATCH_BENCH_CPUPROFILE"), o.Impl)
	if err != nil {
		return err
	}
	stopTrace, err := startTrace(os.Getenv("LISTWATCH_BENCH_TRACE"), o.Impl)
	if err != nil {
		stopCPUProfile()
		return err
	}
	start := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.run(runCtx) }()
	defer func() { stop(); wg.Wait() }()

	if err := pollUntil(ctx, time.Millisecond, p.synced); err != nil {
		return fmt.Errorf("bench: %s did not sync: %w", o.Impl, err)
	}
	rep.SyncMs = ms(time.Since(start))
	stopCPUProfile()
	stopTrace()
	rep.Listed = int(adds.Load())
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rep.HeapAfterSyncBytes = m.HeapAlloc
	if path := os.Getenv("LISTWATCH_BENCH_HEAPPROFILE"); path != "" {
		if err := writeHeapProfile(path + "." + o.Impl); err != nil {
			return err
		}
	}
	rep.RSSAfterSyncBytes, _ = procStatusBytes("self", "VmRSS")
	bw := bufio.NewWriter(out)
	fmt.Fprintln(bw, childSyncedLine)
	if err := bw.Flush(); err != nil {
		return err
	}

	if o.Updates > 0 {
		select {
		case <-allSeen:
		case <-ctx.Done():
			return fmt.Errorf("bench: %s saw %d of %d updates: %w", o.Impl, updates.Load(), o.Updates, ctx.Err())
		}
	}
	rep.LastUpdateUnixNano = lastSeen.Load()
	rep.PeakRSSBytes, _ = procStatusBytes("self", "VmHWM")
	// The kernel updates the high-water mark lazily (only on some unmap
	// paths), so memory given back after the sync-time sample can leave
	// VmHWM below the VmRSS we saw; the peak is at least that sample.
	rep.PeakRSSBytes = max(rep.PeakRSSBytes, rep.RSSAfterSyncBytes)
	if o.Relist && p.relist != nil {
		if err := measureRelist(ctx, p.relist, &rep.InformerRun); err != nil {
			return fmt.Errorf("bench: %s relist: %w", o.Impl, err)
		}
	}
	line, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, "%s\n", line)
	return bw.Flush()
}

// measureRelist forces one relist and samples the heap from just before
// the trigger until the relist's list has arrived and as long again
// (at least 2 s) for the informer to swap it in.
func measureRelist(ctx context.Context, h *relistHook, run *InformerRun) error {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	run.HeapBeforeRelistBytes = m.HeapAlloc
	s := startHeapSampler(2 * time.Millisecond)
	start := time.Now()
	h.trigger()
	select {
	case <-h.done:
	case <-ctx.Done():
		s.stop()
		return ctx.Err()
	}
	listed := time.Since(start)
	run.RelistMs = ms(listed)
	select {
	case <-time.After(max(listed, 2*time.Second)):
	case <-ctx.Done():
	}
	s.stop()
	run.RelistPeakHeapBytes, run.RelistPeakLiveHeapBytes, run.RelistPeakRSSBytes = s.peakHeap, s.peakLive, s.peakRSS
	run.RelistGCs = s.gcs
	return nil
}

// pollUntil checks cond every interval until it holds or ctx ends. Both
// informers' own WaitForCacheSync helpers poll every 100 ms, too coarse
// to time a small sync, so bench polls both the same way, finer.
func pollUntil(ctx context.Context, interval time.Duration, cond func() bool) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// newProbe builds implementation o.Impl; its handler calls added for
// every add and seen for every update.
func newProbe(o ChildOptions, added, seen func()) (probe, error) {
	pods := o.Resource == FixturePods
	switch {
	case o.Impl == ImplListwatchTyped && pods:
		return listwatchProbe[*corev1.Pod](o, added, seen)
	case o.Impl == ImplListwatchTyped:
		return listwatchProbe[*corev1.ConfigMap](o, added, seen)
	case o.Impl == ImplListwatchUnstructured:
		return listwatchProbe[*object.Unstructured](o, added, seen)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return probe{}, fmt.Errorf("bench: client-go config: %w", err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	if childVariant("json") {
		cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { added() }, UpdateFunc: func(_, _ any) { seen() }}
	switch o.Impl {
	case ImplClientGoTyped, ImplClientGoTypedPaged:
		return clientGoTypedProbe(cfg, o.Namespace, o.Resource, handler)
	case ImplClientGoDynamic:
		return clientGoDynamicProbe(cfg, o.Namespace, o.Resource, handler)
	case ImplSeedIndexer:
		return seedIndexerProbe(cfg, o.Namespace, o.Resource, added, seen)
	case ImplSeedFactory:
		return seedFactoryProbe(cfg, o.Namespace, o.Resource, handler)
	}
	return probe{}, fmt.Errorf("bench: unknown informer implementation %q (want one of %v)", o.Impl, Impls)
}

func listwatchProbe[T object.Object](o ChildOptions, added, seen func()) (probe, error) {
	cfg, err := client.LoadKubeconfig(o.Kubeconfig, o.Context)
	if err != nil {
		return probe{}, err
	}
	cfg.QPS = -1
	cfg.DisableProtobuf = childVariant("json")
	if childVariant("gzip") {
		// As against a server elsewhere: the client's default asks a
		// loopback server for no gzip (client.CompressionAuto).
		cfg.Compression = client.CompressionGzip
	}
	c, err := client.New(cfg)
	if err != nil {
		return probe{}, err
	}
	gvr := client.GroupVersionResource{Version: "v1", Resource: o.Resource}
	hook := newRelistHook()
	lw := listwatchRelistLW[T](client.NewResource[T](c, gvr).Namespace(o.Namespace), hook)
	inf, err := informer.New[T](lw, listwatchOptions[T]())
	if err != nil {
		return probe{}, err
	}
	reg, err := inf.AddEventHandler(informer.HandlerFuncs[T]{
		AddFunc:    func(T, bool) { added() },
		UpdateFunc: func(_, _ T) { seen() },
	}, informer.HandlerOptions{})
	if err != nil {
		return probe{}, err
	}
	return probe{
		run:    func(ctx context.Context) { _ = inf.Run(ctx) },
		synced: reg.HasSynced,
		relist: hook,
	}, nil
}

func clientGoTypedProbe(cfg *rest.Config, ns, resource string, h cache.ResourceEventHandler) (probe, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return probe{}, err
	}
	hook := newRelistHook()
	var lw *cache.ListWatch
	var objType k8sruntime.Object
	if resource == FixturePods {
		pods := cs.CoreV1().Pods(ns)
		lw = clientGoRelistLW(func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) { return pods.List(ctx, o) },
			pods.Watch, hook)
		objType = &corev1.Pod{}
	} else {
		cms := cs.CoreV1().ConfigMaps(ns)
		lw = clientGoRelistLW(func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) { return cms.List(ctx, o) },
			cms.Watch, hook)
		objType = &corev1.ConfigMap{}
	}
	inf := cache.NewSharedIndexInformer(lw, objType, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return sharedInformerProbe(inf, h, hook)
}

// clientGoDynamicProbe is what dynamicinformer builds (a
// SharedIndexInformer of *unstructured.Unstructured over the dynamic
// client, with the namespace index), spelled out so its ListWatch can
// carry the relist hook.
func clientGoDynamicProbe(cfg *rest.Config, ns, resource string, h cache.ResourceEventHandler) (probe, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return probe{}, err
	}
	ri := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: resource}).Namespace(ns)
	hook := newRelistHook()
	lw := clientGoRelistLW(func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) { return ri.List(ctx, o) },
		ri.Watch, hook)
	inf := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return sharedInformerProbe(inf, h, hook)
}

func seedFactoryProbe(cfg *rest.Config, ns, resource string, h cache.ResourceEventHandler) (probe, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return probe{}, err
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().ConfigMaps().Informer()
	if resource == FixturePods {
		inf = f.Core().V1().Pods().Informer()
	}
	return sharedInformerProbe(inf, h, nil)
}

func sharedInformerProbe(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, hook *relistHook) (probe, error) {
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return probe{}, err
	}
	return probe{run: inf.RunWithContext, synced: reg.HasSynced, relist: hook}, nil
}

// seedIndexerProbe is the seed article's controller skeleton: handlers
// only enqueue keys; one worker drains the queue. An update counts as
// seen when the worker takes its key, as in the article's controller.
func seedIndexerProbe(cfg *rest.Config, ns, resource string, added, seen func()) (probe, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return probe{}, err
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), resource, ns, fields.Everything())
	var objType k8sruntime.Object = &corev1.ConfigMap{}
	if resource == FixturePods {
		objType = &corev1.Pod{}
	}
	queue := cgworkqueue.NewTypedRateLimitingQueue(cgworkqueue.DefaultTypedControllerRateLimiter[string]())
	// pending counts update events not yet handed to the worker; a key
	// updated twice before the worker takes it is merged by the queue,
	// so the worker credits every pending update it covers.
	var mu sync.Mutex
	pending := map[string]int{}
	_, ctrl := cache.NewIndexerInformer(lw, objType, 0, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			added()
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				queue.Add(key)
			}
		},
		UpdateFunc: func(_, obj any) {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				mu.Lock()
				pending[key]++
				mu.Unlock()
				queue.Add(key)
			}
		},
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				queue.Add(key)
			}
		},
	}, cache.Indexers{})
	run := func(ctx context.Context) {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); ctrl.RunWithContext(ctx) }()
		go func() {
			defer wg.Done()
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				mu.Lock()
				n := pending[key]
				delete(pending, key)
				mu.Unlock()
				for range n {
					seen()
				}
				queue.Forget(key)
				queue.Done(key)
			}
		}()
		<-ctx.Done()
		queue.ShutDown()
		wg.Wait()
	}
	return probe{run: run, synced: ctrl.HasSynced}, nil
}

// ErrChild wraps the failure of an informer child process.
var ErrChild = errors.New("bench: informer child failed")

// listwatchOptions are the informer options the listwatch children use:
// the defaults, plus the options named in LISTWATCH_BENCH_INFORMER
// (comma-separated: "drop-managed-fields", "no-dedup", "page-size=N",
// "consistent-first-list"; and, read by listwatchProbe, "json" and "gzip").
// childVariant reports whether LISTWATCH_BENCH_INFORMER names variant.
func childVariant(variant string) bool {
	return slices.Contains(strings.Split(os.Getenv("LISTWATCH_BENCH_INFORMER"), ","), variant)
}

func listwatchOptions[T object.Object]() informer.Options[T] {
	var o informer.Options[T]
	for _, opt := range strings.Split(os.Getenv("LISTWATCH_BENCH_INFORMER"), ",") {
		switch opt {
		case "drop-managed-fields":
			o.Transform = informer.DropManagedFieldsOf[T]
		case "no-dedup":
			o.DisableDedup = true
		case "consistent-first-list":
			o.Reflector.ConsistentFirstList = true
		default:
			if n, ok := strings.CutPrefix(opt, "page-size="); ok {
				o.Reflector.PageSize, _ = strconv.ParseInt(n, 10, 64)
			}
		}
	}
	return o
}

// startCPUProfile profiles the CPU until the informer syncs, into
// path.impl, when LISTWATCH_BENCH_CPUPROFILE names a path prefix; the
// returned func stops it.
func startCPUProfile(path, impl string) (func(), error) {
	return startRecording(path, impl, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace records an execution trace (go tool trace) until the
// informer syncs, into path.impl, when LISTWATCH_BENCH_TRACE names a path
// prefix; the returned func stops it.
func startTrace(path, impl string) (func(), error) {
	return startRecording(path, impl, trace.Start, trace.Stop)
}

// startRecording starts a recording (start, stop) into the file
// path.impl, or nothing when path is empty; the returned func stops it
// and closes the file.
func startRecording(path, impl string, start func(io.Writer) error, stop func()) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path + "." + impl)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { stop(); _ = f.Close() }, nil
}

// writeHeapProfile writes the heap profile after sync, for pprof, when
// LISTWATCH_BENCH_HEAPPROFILE names a path prefix.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
