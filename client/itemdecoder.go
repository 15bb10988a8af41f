package client

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// A list body is read by one goroutine, but decoding its items (protobuf
// Unmarshal, or JSON) is most of a large list's CPU and each item decodes
// on its own. itemDecoder lets the goroutine that reads the body frame the
// items and copy their bytes into batches, which worker goroutines decode,
// while it reads on; the decoded items are handed to each in the order
// they came, on the reading goroutine, exactly as a decode in place would
// hand them. On a list of 10,000 pods against kube-apiserver this turns a
// client bound to one core into one that uses the cores the server leaves
// idle (README, Performance).
//
// A list smaller than one batch never starts a goroutine: its items are
// decoded in place when the list ends. Neither does a process with
// GOMAXPROCS 1.

const (
	// itemBatchBytes and itemBatchItems bound a batch: big enough that
	// handing it over costs little beside decoding it, small enough that
	// the first items reach each soon after they arrive.
	itemBatchBytes = 128 << 10
	itemBatchItems = 256
	// maxItemWorkers bounds the decoding goroutines of one list: beyond
	// a few, what each does with the items is the bottleneck.
	maxItemWorkers = 4
)

// itemBatch is a run of consecutive items: their bytes, back to back in
// buf, ending at ends; once decoded, items and the error of the first item
// that failed (at index errAt).
type itemBatch[T any] struct {
	buf   []byte
	ends  []int
	items []T
	err   error
	// panicked holds what decode panicked with, to panic with again on
	// the reading goroutine, where a decode in place would have (and
	// where a caller's recover can catch it).
	panicked any
	done     chan struct{} // closed when decoded
}

// decodeAll decodes b's items, up to the first that fails, unless stopped.
func (b *itemBatch[T]) decodeAll(decode func([]byte) (T, error), stopped *atomic.Bool) {
	defer func() {
		if p := recover(); p != nil {
			b.panicked = p
		}
	}()
	start := 0
	for _, end := range b.ends {
		if stopped.Load() {
			return
		}
		item, err := decode(b.buf[start:end:end])
		if err != nil {
			b.err = err
			return
		}
		b.items = append(b.items, item)
		start = end
	}
}

// itemDecoder decodes items given to add, in batches, on up to workers
// goroutines, and passes them to each in order. Call finish once the
// body has been read (or failed), and stop, deferred, on every path.
type itemDecoder[T any] struct {
	decode  func([]byte) (T, error)
	each    func(T) error
	workers int
	// batchBytes and batchItems are itemBatchBytes and itemBatchItems
	// but in tests.
	batchBytes, batchItems int

	cur     *itemBatch[T]   // being filled
	pending []*itemBatch[T] // handed to the workers, in order
	free    []*itemBatch[T]
	work    chan *itemBatch[T]
	wg      sync.WaitGroup
	stopped atomic.Bool
	failed  error // the first error of decode or each, in item order
}

func newItemDecoder[T any](decode func([]byte) (T, error), each func(T) error) *itemDecoder[T] {
	return &itemDecoder[T]{
		decode: decode, each: each,
		workers:    min(runtime.GOMAXPROCS(0), maxItemWorkers),
		batchBytes: itemBatchBytes, batchItems: itemBatchItems,
	}
}

// maxPending is how many batches may be decoding or decoded and waiting:
// enough for every worker to have the next at hand.
func (d *itemDecoder[T]) maxPending() int { return 2*d.workers + 1 }

// add takes one item's bytes, which it copies (raw may lie in the
// reader's buffer). It returns the error of an item before it, or of
// each, once one has failed; the caller stops reading then.
func (d *itemDecoder[T]) add(raw []byte) error {
	if d.failed != nil {
		return d.failed
	}
	if d.workers < 2 {
		return d.deliverOne(raw)
	}
	if d.cur == nil {
		d.cur = d.newBatch()
	}
	b := d.cur
	b.buf = append(b.buf, raw...)
	b.ends = append(b.ends, len(b.buf))
	if len(b.buf) < d.batchBytes && len(b.ends) < d.batchItems {
		// Hand over a batch decoded meanwhile, if any, so that items
		// are not held back while the body arrives slowly.
		if len(d.pending) > 0 && isClosed(d.pending[0].done) {
			return d.deliverHead()
		}
		return nil
	}
	d.cur = nil
	d.submit(b)
	// Hand over what is decoded already; wait only when the workers are
	// as far ahead as they may get.
	for len(d.pending) > 0 && (len(d.pending) >= d.maxPending() || isClosed(d.pending[0].done)) {
		if err := d.deliverHead(); err != nil {
			return err
		}
	}
	return nil
}

// errDecodePanicked is the list's error once decode panicked (the panic
// itself goes on up the reading goroutine).
var errDecodePanicked = errors.New("client: decoding a list item panicked")

// finish hands over every item added, in order, and stops the workers.
// readErr is how reading the body ended: an error of an item or of each
// comes first, as it would have in a decode in place (the reader read on
// only because decoding was behind); readErr comes after every item read
// before it. finish returns the first error.
func (d *itemDecoder[T]) finish(readErr error) error {
	defer d.stop()
	if d.failed != nil {
		return d.failed
	}
	if b := d.cur; b != nil {
		d.cur = nil
		if d.work == nil {
			// The whole list fitted one batch: decode it here.
			b.decodeAll(d.decode, &d.stopped)
			b.done = closedChan
			d.pending = append(d.pending, b)
		} else {
			d.submit(b)
		}
	}
	for len(d.pending) > 0 {
		if err := d.deliverHead(); err != nil {
			return err
		}
	}
	return readErr
}

// stop ends the workers and waits for them; what they had not decoded
// yet is dropped. It may be called again.
func (d *itemDecoder[T]) stop() {
	d.stopped.Store(true)
	if d.work != nil {
		close(d.work)
		d.work = nil
		d.wg.Wait()
	}
	d.pending = nil
}

func (d *itemDecoder[T]) newBatch() *itemBatch[T] {
	if n := len(d.free); n > 0 {
		b := d.free[n-1]
		d.free = d.free[:n-1]
		return b
	}
	if d.work == nil {
		// Perhaps the only batch of a small list: it grows as it needs.
		return &itemBatch[T]{}
	}
	// Room for a full batch and the item that overflows it, most often.
	return &itemBatch[T]{buf: make([]byte, 0, d.batchBytes+d.batchBytes/4)}
}

// submit hands b to the workers, starting them with the first batch.
func (d *itemDecoder[T]) submit(b *itemBatch[T]) {
	if d.work == nil {
		// Room for every pending batch: submit never blocks.
		d.work = make(chan *itemBatch[T], d.maxPending())
		d.wg.Add(d.workers)
		for range d.workers {
			go d.worker(d.work)
		}
	}
	b.done = make(chan struct{})
	d.pending = append(d.pending, b)
	d.work <- b
}

func (d *itemDecoder[T]) worker(work <-chan *itemBatch[T]) {
	defer d.wg.Done()
	for b := range work {
		b.decodeAll(d.decode, &d.stopped)
		close(b.done)
	}
}

// deliverHead waits for the oldest pending batch, hands its items to
// each and recycles it.
func (d *itemDecoder[T]) deliverHead() error {
	b := d.pending[0]
	d.pending[0] = nil
	d.pending = d.pending[1:]
	<-b.done
	for _, item := range b.items {
		if err := d.each(item); err != nil {
			d.failed = err
			return err
		}
	}
	if b.panicked != nil {
		d.failed = errDecodePanicked
		panic(b.panicked)
	}
	if b.err != nil {
		d.failed = b.err
		return b.err
	}
	clear(b.items) // each keeps them; the batch must not
	b.buf, b.ends, b.items, b.err, b.panicked = b.buf[:0], b.ends[:0], b.items[:0], nil, nil
	d.free = append(d.free, b)
	return nil
}

// deliverOne decodes raw in place and hands it to each.
func (d *itemDecoder[T]) deliverOne(raw []byte) error {
	item, err := d.decode(raw)
	if err == nil {
		err = d.each(item)
	}
	if err != nil {
		d.failed = err
	}
	return err
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
