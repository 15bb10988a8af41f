package informer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/internal/backoff"
	"github.com/listwatch/listwatch/internal/protomemo"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// ReflectorOptions configure a Reflector. The zero value is usable.
type ReflectorOptions struct {
	// Name appears in logs (for example "pods" or "default/configmaps").
	Name string
	// PageSize is the LIST limit; default 500. Negative lists in one page.
	PageSize int64
	// StreamingList opens with a watch that sends the initial state
	// (sendInitialEvents=true) instead of a LIST. When the server ends the
	// stream before the end bookmark, that one sync falls back to LIST and
	// the next relist streams again, as client-go does; when the server
	// refuses sendInitialEvents (400, 404, 405, 406, 415, 422, 501), the
	// reflector lists from then on.
	StreamingList bool
	// ConsistentFirstList makes the first LIST ask for the latest state
	// (resourceVersion unset: a consistent read, in pages) instead of any
	// state (resourceVersion "0", client-go's choice). kube-apiserver
	// answers "0" from its watch cache in one page whatever the limit,
	// which the informer reads a chunk at a time (ChunkLister), while a
	// consistent page costs kube about 19 ms: at 100,000 ConfigMaps, 4 s
	// in 500-item pages against about 1 s in one. Servers that honour
	// limit with "0", as listwatch serve does, page either way.
	ConsistentFirstList bool
	// MinWatchTimeout: each watch asks the server to end it after a random
	// time in [MinWatchTimeout, 2*MinWatchTimeout), spreading reconnects
	// like client-go; default 5 minutes. The client gives up on a silent
	// watch WatchDeadlineGrace after that.
	MinWatchTimeout    time.Duration
	WatchDeadlineGrace time.Duration // default 30s
	// Backoff spaces list retries and watch retries alike.
	Backoff BackoffOptions
	// RelistAfterWatchFailures is how many watches in a row may fail
	// transiently (see Reflector) before the reflector relists; default
	// DefaultRelistAfterWatchFailures, whose doc says why.
	RelistAfterWatchFailures int
	// Metrics, if set, receives the reflector's (and the informer's)
	// measurements, such as NewPrometheusProvider's. Nil records nothing.
	Metrics MetricsProvider
	// Logger; default slog.Default(). LogEvery rate-limits the "cannot
	// sync" message (default 30s; a change of cause logs at once).
	Logger   *slog.Logger
	LogEvery time.Duration
	// ResyncPeriod returns the current resync period (0: none);
	// ShouldResync, if set, is asked at every tick. Both are read by the
	// resync goroutine; KickResync tells it the period changed.
	ResyncPeriod func() time.Duration
	ShouldResync func() bool
}

func (o ReflectorOptions) withDefaults() ReflectorOptions {
	if o.PageSize == 0 {
		o.PageSize = 500
	}
	if o.MinWatchTimeout <= 0 {
		o.MinWatchTimeout = 5 * time.Minute
	}
	if o.WatchDeadlineGrace <= 0 {
		o.WatchDeadlineGrace = 30 * time.Second
	}
	o.Backoff = o.Backoff.withDefaults()
	if o.RelistAfterWatchFailures <= 0 {
		o.RelistAfterWatchFailures = DefaultRelistAfterWatchFailures
	}
	if o.Metrics == nil {
		o.Metrics = noMetrics{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.LogEvery <= 0 {
		o.LogEvery = 30 * time.Second
	}
	return o
}

// Reflector keeps a Sink in step with the server: list, then watch from the
// list's resourceVersion for as long as the server can resume from it.
//
// A watch that ends cleanly (the server's timeoutSeconds, our deadline) is
// reopened at once from the last resourceVersion seen; one that ended
// cleanly within a second without an event is reopened after the backoff,
// so a server that closes every watch at once is not hammered. A watch
// that fails transiently (connection refused or reset, a stream cut short,
// 5xx, 429, 408) is reopened from the last resourceVersion after the
// backoff, or after the server's Retry-After (up to 5 minutes) when that
// is longer. The reflector lists again only when resuming cannot work:
// 410 Gone or Expired (as a response or an ERROR event), a resourceVersion
// the server refuses, another 4xx, or RelistAfterWatchFailures transient
// failures in a row with no event delivered in between.
type Reflector[T object.Object] struct {
	lw      ListerWatcher[T]
	sink    Sink[T]
	opts    ReflectorOptions
	kick    chan struct{} // capacity 1: the resync period changed
	logger  *slog.Logger
	metrics ReflectorMetrics
	// backoff spaces list and watch retries; only Run's goroutine uses it.
	backoff backoff.Exponential
	// memo, set by an informer that shares its objects' parts, goes with
	// every list's context: the client decodes the parts that repeat
	// once (see package protomemo and the deduper).
	memo *protomemo.Memo

	// mu guards the fields below; it is never held across a call to lw or
	// sink.
	mu sync.Mutex
	// lastRV is the newest resourceVersion observed (list, event or
	// bookmark). It never decreases except when a relist defines a new
	// baseline.
	lastRV string
	// rvGone: the server said lastRV is too old; the next list or
	// streaming list asks for the latest state (resourceVersion "").
	rvGone       bool
	lastErr      error
	streamingOff bool
	goneInARow   int
	logClass     string
	loggedAt     time.Time
	suppressed   int
}

// NewReflector returns a reflector feeding sink from lw. It starts nothing.
func NewReflector[T object.Object](lw ListerWatcher[T], sink Sink[T], opts ReflectorOptions) *Reflector[T] {
	opts = opts.withDefaults()
	r := &Reflector[T]{
		lw: lw, sink: sink, opts: opts,
		kick:    make(chan struct{}, 1),
		logger:  opts.Logger.With("reflector", opts.Name),
		backoff: opts.Backoff.exponential(),
	}
	r.metrics = opts.Metrics.NewReflectorMetrics(opts.Name, r.snapshot)
	return r
}

func (r *Reflector[T]) snapshot() ReflectorSnapshot {
	return ReflectorSnapshot{LastSyncResourceVersion: r.LastSyncResourceVersion()}
}

// LastSyncResourceVersion is the newest resourceVersion the reflector has
// observed.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRV
}

// LastSyncError is the last error that kept the reflector from syncing (a
// failed list, a failed watch it is retrying, or the one that made it
// relist), or nil once a later list succeeded or a watch delivered an
// event.
func (r *Reflector[T]) LastSyncError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// KickResync tells the resync goroutine to re-read ResyncPeriod.
func (r *Reflector[T]) KickResync() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run lists and watches until ctx ends, retrying with backoff, and returns
// nil after its resync goroutine has exited.
func (r *Reflector[T]) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if r.opts.ResyncPeriod != nil {
		wg.Go(func() { r.resyncLoop(ctx) })
	}
	defer wg.Wait()
	for {
		start := time.Now()
		err := r.listAndWatch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		r.recordError(err)
		if !r.waitRetry(ctx, err, time.Since(start)) {
			return nil
		}
	}
}

// waitRetry waits out the backoff after an attempt that ran for ran and
// failed with err, or the server's Retry-After when that is longer. It
// reports false if ctx ended first.
func (r *Reflector[T]) waitRetry(ctx context.Context, err error, ran time.Duration) bool {
	d := max(r.backoff.Next(ran), retryAfter(err))
	return backoff.Sleep(ctx, d) == nil
}

// listAndWatch returns only with an error (or when ctx ends).
func (r *Reflector[T]) listAndWatch(ctx context.Context) error {
	var w *openWatch[T]
	if r.streaming() {
		var err error
		if w, err = r.streamList(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// This sync lists; the next relist streams again unless the
			// server refused streaming outright.
			r.logger.Info("streaming list failed, falling back to LIST", "err", err)
			w = nil
		}
	}
	if w == nil {
		if err := r.list(ctx); err != nil {
			return err
		}
	}
	return r.watchLoop(ctx, w)
}

func (r *Reflector[T]) streaming() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opts.StreamingList && !r.streamingOff
}

// relistRV is where a (streaming) list starts: the latest state when the
// known RV is gone, else not older than what was already seen, so the
// cache never goes back in time. With nothing known yet, a streaming list
// asks for the latest state, and a LIST for any (resourceVersion "0"), as
// client-go's reflector does: a server may answer that from its cache
// without first making sure the cache is up to date, and the watch that
// follows brings the informer up to date anyway (ConsistentFirstList
// says why one might not). kube-apiserver answers it from its watch
// cache in one page, ignoring limit; a consistent paged LIST there costs
// about 19 ms a page of 500 (100k objects: 4 s, against 1 s in one page).
func (r *Reflector[T]) relistRV(streaming bool) (rv, match string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.rvGone:
		return "", ""
	case r.lastRV == "" && (streaming || r.opts.ConsistentFirstList):
		return "", ""
	case r.lastRV == "":
		return "0", ""
	}
	return r.lastRV, wire.MatchNotOlderThan
}

// list does a paged LIST and hands the result to Replace. Each page is
// requested as soon as the one before it has arrived (fetchPages), so the
// server cuts, sends and the client decodes the next page while the sink
// takes this one: at 100k objects, a sync's wall time had the client
// waiting on the server for about 40% of it. A page comes in chunks as it
// is decoded when the ListerWatcher can (ChunkLister), and the first list
// of a sink that can (EarlyLister) is queued chunk by chunk, so that the
// informer stores and hands out objects while the rest are decoded.
func (r *Reflector[T]) list(ctx context.Context) (err error) {
	if r.memo != nil {
		// Run after stop (below): every object this list decoded is in
		// the sink by then, or dropped, so no sharing walk needs the
		// memo's parts again, and its bytes are not kept between lists.
		defer r.memo.Reset()
	}
	rv, match := r.relistRV(false)
	chunks, stop := r.fetchPages(ctx, wire.ListOptions{ResourceVersion: rv, ResourceVersionMatch: match, Limit: max(r.opts.PageSize, 0)})
	defer stop()
	// The sink is asked whether it takes the list early at its first
	// item, so that a first list that fails before any (403 while RBAC
	// propagates, a server not up yet) does not use up its one chance.
	lister, canEarly := r.sink.(EarlyLister[T])
	var early EarlyLister[T]
	queuedEarly := false
	defer func() {
		if err != nil && queuedEarly {
			// Handlers have seen part of this list, maybe newer than what
			// another "any state" read would return: the next list asks
			// for the latest, so that the informer never goes back.
			r.setGone()
		}
	}()
	var items []T
	listRV := ""
	for c := range chunks {
		if c.err != nil {
			if isGone(c.err) || refusesResourceVersion(c.err) {
				r.setGone()
			}
			return fmt.Errorf("list: %w", c.err)
		}
		if c.restarted {
			// What was queued early stays; Replace settles it.
			items, listRV, early, canEarly = nil, "", nil, false
		}
		if len(c.items) > 0 {
			if canEarly {
				canEarly = false
				if lister.BeginEarlyList() {
					early = lister
				}
			}
			if early != nil {
				queuedEarly = true
				if err := early.QueueListed(c.items); err != nil {
					return fmt.Errorf("replace: %w", err)
				}
			} else {
				if err := r.prepare(c.items); err != nil {
					return err
				}
				items = append(items, c.items...)
			}
		}
		if c.meta == nil {
			continue
		}
		if listRV == "" {
			listRV = c.meta.ResourceVersion
		}
		if c.meta.Continue != "" {
			continue
		}
		if early == nil {
			return r.replace(items, listRV)
		}
		if err := early.EndEarlyList(listRV); err != nil {
			return fmt.Errorf("replace: %w", err)
		}
		r.listed(listRV)
		return nil
	}
	// fetchPages stops early only when ctx ends.
	return fmt.Errorf("list: %w", context.Cause(ctx))
}

// listChunk is what fetchPages sends: part of a page's items, or the end
// of a page with its metadata, or the news that the list restarted, or
// the error that ended it.
type listChunk[T object.Object] struct {
	items []T
	meta  *wire.ListMeta
	// restarted: the continue token outlived the server's history; what
	// follows is everything, read at once, and earlier pages are void.
	restarted bool
	err       error
}

// listChunkItems is how many items a chunk of a page holds at most.
const listChunkItems = 500

// errListStopped: fetchPages could not hand a chunk over because its
// context ended; the list was not refused.
var errListStopped = errors.New("list stopped")

// fetchPages lists from opts page after page on a goroutine of its own,
// which reads and decodes the next chunk or page while the caller handles
// the last. The channel holds one message, so that the end of a page goes
// out, and the next page is asked for, while the caller still works on
// the page's last chunk: about three chunks are held at a time, not
// counting what the caller keeps. The channel ends after the last page,
// the first error, or when ctx ends; stop ends the goroutine and waits
// for it.
func (r *Reflector[T]) fetchPages(ctx context.Context, opts wire.ListOptions) (<-chan listChunk[T], func()) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan listChunk[T], 1)
	done := make(chan struct{})
	send := func(c listChunk[T]) bool {
		select {
		case out <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	each := func(items []T) error {
		if !send(listChunk[T]{items: items}) {
			return errListStopped
		}
		return nil
	}
	go func() {
		defer close(done)
		defer close(out)
		for {
			meta, err := r.listPage(ctx, opts, each)
			if err != nil && opts.Continue != "" && isGone(err) {
				// Take everything in one consistent read instead.
				if !send(listChunk[T]{restarted: true}) {
					return
				}
				meta, err = r.listPage(ctx, wire.ListOptions{}, each)
			}
			if errors.Is(err, errListStopped) {
				return
			}
			if err != nil {
				send(listChunk[T]{err: err})
				return
			}
			if !send(listChunk[T]{meta: &meta}) || meta.Continue == "" {
				return
			}
			opts = wire.ListOptions{Limit: opts.Limit, Continue: meta.Continue}
		}
	}()
	return out, func() { cancel(); <-done }
}

// prepare hands a list page to the sink as it arrives, if the sink takes
// lists page by page (see ListPreparer).
func (r *Reflector[T]) prepare(items []T) error {
	if lp, ok := r.sink.(ListPreparer[T]); ok && len(items) > 0 {
		if err := lp.PrepareListed(items); err != nil {
			return fmt.Errorf("replace: %w", err)
		}
	}
	return nil
}

// listPage is one LIST request, measured, its items handed to each as
// they are decoded when the ListerWatcher can (ChunkLister).
func (r *Reflector[T]) listPage(ctx context.Context, opts wire.ListOptions, each func([]T) error) (wire.ListMeta, error) {
	start := time.Now()
	n := 0
	var blocked time.Duration // handing chunks over, not listing
	count := func(items []T) error {
		for _, o := range items {
			if isNil(o) {
				return errors.New("list: a page holds a nil object")
			}
		}
		n += len(items)
		t := time.Now()
		err := each(items)
		blocked += time.Since(t)
		return err
	}
	var meta wire.ListMeta
	var err error
	if r.memo != nil {
		ctx = protomemo.NewContext(ctx, r.memo)
	}
	if cl, ok := r.lw.(ChunkLister[T]); ok {
		meta, err = cl.ListChunks(ctx, opts, listChunkItems, count)
	} else {
		meta, err = listInOneChunk(ctx, r.lw, opts, count)
	}
	switch {
	case errors.Is(err, errListStopped):
	case err != nil:
		r.metrics.Listed(0, time.Since(start)-blocked, err)
	default:
		r.metrics.Listed(n, time.Since(start)-blocked, nil)
	}
	return meta, err
}

func (r *Reflector[T]) replace(items []T, rv string) error {
	var err error
	if lp, ok := r.sink.(ListPreparer[T]); ok {
		err = lp.ReplacePrepared(items, rv)
	} else {
		err = r.sink.Replace(items, rv)
	}
	if err != nil {
		return fmt.Errorf("replace: %w", err)
	}
	r.listed(rv)
	return nil
}

// listed records a complete list at rv.
func (r *Reflector[T]) listed(rv string) {
	r.mu.Lock()
	r.lastRV, r.rvGone, r.lastErr = rv, false, nil
	r.mu.Unlock()
}

func (r *Reflector[T]) setGone() {
	r.mu.Lock()
	r.rvGone = true
	r.mu.Unlock()
}

// openWatch is a watch with the cancel func of its client-side deadline.
type openWatch[T object.Object] struct {
	w       client.Watcher[T]
	stop    func()
	started time.Time
	events  int
}

func (ow *openWatch[T]) close() {
	ow.stop()
	_ = ow.w.Close()
}

// startWatch opens a watch with a randomised server timeout, a client
// deadline a little later, and Close wired to ctx so Next never outlives it.
func (r *Reflector[T]) startWatch(ctx context.Context, opts wire.ListOptions) (*openWatch[T], error) {
	timeout := r.opts.MinWatchTimeout + rand.N(r.opts.MinWatchTimeout)
	secs := int64(timeout / time.Second)
	opts.TimeoutSeconds = &secs
	opts.AllowWatchBookmarks = true
	wctx, cancel := context.WithTimeout(ctx, timeout+r.opts.WatchDeadlineGrace)
	w, err := r.lw.Watch(wctx, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	closed := make(chan struct{})
	stopAfter := context.AfterFunc(wctx, func() {
		_ = w.Close()
		close(closed)
	})
	stop := func() {
		if !stopAfter() {
			<-closed // the close is running or done; wait so nothing outlives us
		}
		cancel()
	}
	return &openWatch[T]{w: w, stop: stop, started: time.Now()}, nil
}

// watchLoop watches from lastRV until resuming cannot work (see
// Reflector), and returns why. w, if not nil, is an already open watch (a
// streaming list's).
func (r *Reflector[T]) watchLoop(ctx context.Context, w *openWatch[T]) error {
	failures := 0 // transient failures in a row with no event delivered
	for {
		started := time.Now()
		var err error
		if w == nil {
			w, err = r.startWatch(ctx, wire.ListOptions{ResourceVersion: r.LastSyncResourceVersion()})
		}
		events := 0
		if w != nil {
			err = r.consume(w, nil)
			w.close()
			events, started = w.events, w.started
			w = nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ran := time.Since(started)
		end, reason := classifyWatchEnd(err)
		short := end == rewatch && events == 0 && ran < shortWatch
		r.metrics.Watched(events, ran, short, err)
		if events > 0 {
			failures = 0
		}
		switch {
		case end == relist:
			return r.relistAfter(err, reason)
		case end == rewatch && !short:
			continue
		case end == retryWatch:
			failures++
			if failures >= r.opts.RelistAfterWatchFailures {
				return r.relistAfter(fmt.Errorf("%d watches in a row failed: %w", failures, err), RelistWatchFailures)
			}
			r.recordError(fmt.Errorf("watch: %w", err))
		}
		if !r.waitRetry(ctx, err, ran) {
			return ctx.Err()
		}
	}
}

// relistAfter records why the watch is given up and returns the error
// that makes Run list again.
func (r *Reflector[T]) relistAfter(err error, reason RelistReason) error {
	if reason == RelistExpired || reason == RelistResourceVersionRefused {
		r.setGone()
	}
	r.metrics.Relisted(reason)
	return fmt.Errorf("watch: %w", err)
}

// initialEvents collects a streaming list until its end bookmark.
type initialEvents[T object.Object] struct {
	items map[string]T
	done  bool
}

// streamList opens a watch with sendInitialEvents and consumes it up to the
// initial-events-end bookmark, which triggers Replace. It returns the open
// watch, positioned after the bookmark. On error the watch is closed and
// the caller falls back to LIST.
func (r *Reflector[T]) streamList(ctx context.Context) (*openWatch[T], error) {
	rv, _ := r.relistRV(true)
	send := true
	opts := wire.ListOptions{SendInitialEvents: &send, ResourceVersionMatch: wire.MatchNotOlderThan, ResourceVersion: rv}
	w, err := r.startWatch(ctx, opts)
	if err != nil {
		if isGone(err) {
			r.setGone()
		} else if refusesStreaming(err) {
			r.disableStreaming()
		}
		return nil, err
	}
	ie := &initialEvents[T]{items: map[string]T{}}
	err = r.consume(w, ie)
	if ie.done {
		return w, nil // consume stopped right after Replace
	}
	w.close()
	switch {
	case err == nil:
		err = ErrNoInitialEventsEnd
	case errors.Is(err, io.EOF):
		// The server ignored sendInitialEvents, or ended the stream early
		// (a restart, its timeout): list this time, stream again at the
		// next relist, as client-go does.
		err = fmt.Errorf("%w: %w", ErrNoInitialEventsEnd, err)
	case isGone(err):
		r.setGone()
	}
	return nil, err
}

func refusesStreaming(err error) bool {
	switch wire.CodeOf(err) {
	case 400, 404, 405, 406, 415, 422, 501:
		return true
	}
	return false
}

func (r *Reflector[T]) disableStreaming() {
	r.mu.Lock()
	r.streamingOff = true
	r.mu.Unlock()
}

// consume applies w's events to the sink until Next fails. With ie set it
// collects the initial events instead, and returns nil right after the
// end bookmark's Replace.
func (r *Reflector[T]) consume(w *openWatch[T], ie *initialEvents[T]) error {
	for {
		ev, err := w.w.Next()
		if err != nil {
			return err
		}
		if isNil(ev.Object) {
			return fmt.Errorf("watch: %s event without an object", ev.Type)
		}
		w.events++
		if ie != nil {
			if err := r.collect(ie, ev); err != nil || ie.done {
				return err
			}
			continue
		}
		if err := r.apply(ev); err != nil {
			return err
		}
	}
}

func (r *Reflector[T]) collect(ie *initialEvents[T], ev wire.Event[T]) error {
	switch ev.Type {
	case wire.Added, wire.Modified:
		one := []T{ev.Object}
		if err := r.prepare(one); err != nil {
			return err
		}
		ie.items[object.Key(ev.Object)] = one[0]
	case wire.Deleted:
		delete(ie.items, object.Key(ev.Object))
	case wire.Bookmark:
		if ev.Object.GetAnnotations()[wire.AnnotationInitialEventsEnd] != "true" {
			return nil
		}
		list := make([]T, 0, len(ie.items))
		for _, o := range ie.items {
			list = append(list, o)
		}
		ie.items = nil
		if err := r.replace(list, ev.Object.GetResourceVersion()); err != nil {
			return err
		}
		ie.done = true
	default:
		return fmt.Errorf("watch: unexpected event type %q", ev.Type)
	}
	return nil
}

// apply hands one watch event to the sink, dropping anything not newer
// than lastRV (duplicates and out-of-order delivery around reconnects).
func (r *Reflector[T]) apply(ev wire.Event[T]) error {
	rv := ev.Object.GetResourceVersion()
	r.mu.Lock()
	fresh := newerRV(rv, r.lastRV)
	r.mu.Unlock()
	if !fresh {
		return nil
	}
	var err error
	switch ev.Type {
	case wire.Added:
		err = r.sink.Add(ev.Object)
	case wire.Modified:
		err = r.sink.Update(ev.Object)
	case wire.Deleted:
		err = r.sink.Delete(ev.Object)
	case wire.Bookmark:
	default:
		return fmt.Errorf("watch: unexpected event type %q", ev.Type)
	}
	if err != nil {
		// As client-go's reflector: an event the sink refuses (its
		// Transform failed) is logged and skipped, and the watch goes on.
		// Relisting would not help (the list runs the same Transform, on
		// the same object) and would stop every other object's events.
		msg := "watch event not stored"
		if ev.Type == wire.Deleted {
			msg = "watch event delivered untransformed" // the queue's Delete keeps a deletion
		}
		r.logger.Error(msg, "type", ev.Type, "object", object.Key(ev.Object), "resourceVersion", rv, "err", err)
	}
	r.mu.Lock()
	if rv != "" {
		r.lastRV = rv
	}
	// The watch works again: whatever kept it from syncing is over.
	r.goneInARow, r.lastErr = 0, nil
	r.mu.Unlock()
	return nil
}

// resyncLoop ticks at the resync period. A kick (a handler added or
// removed) brings the next tick forward when the new period ends sooner,
// and otherwise keeps it: restarting the period on every kick would starve
// the resyncs of a handler while others come and go more often than its
// period (ShouldResync picks the handlers that are due at each tick).
func (r *Reflector[T]) resyncLoop(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	var next time.Time // the next tick; zero: none
	arm := func() {
		period := r.opts.ResyncPeriod()
		if period <= 0 {
			next = time.Time{}
			t.Stop()
			return
		}
		if at := time.Now().Add(period); next.IsZero() || at.Before(next) {
			next = at
		}
		t.Reset(time.Until(next))
	}
	arm()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
			arm()
		case <-t.C:
			next = time.Time{}
			if r.opts.ShouldResync == nil || r.opts.ShouldResync() {
				if err := r.sink.Resync(); err != nil {
					r.logger.Error("resync failed", "err", err)
				}
			}
			arm()
		}
	}
}

// isGone: the server no longer has the history the request needs (410,
// reason Gone or Expired): the reflector must relist from the latest state.
func isGone(err error) bool { return client.IsGone(err) }

// isNil reports whether v is a nil interface or a nil pointer, which a
// decoder may produce for an event without an object.
func isNil[T any](v T) bool {
	rv := reflect.ValueOf(any(v))
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Interface, reflect.Slice:
		return rv.IsNil()
	}
	return false
}
