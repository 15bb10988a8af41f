package server

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/filters"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// DefaultWatchWriteTimeout is how long one write of a watch event may take
// before the watcher, who is not reading, is disconnected.
const DefaultWatchWriteTimeout = 60 * time.Second

// watch answers a WATCH: a newline-framed stream of events, flushed one by
// one, until timeoutSeconds (or, without it or with 0, a random time in
// [MinRequestTimeout, 2*MinRequestTimeout)) passes, the client leaves, or
// the Reader ends the stream. An expired resourceVersion is HTTP 200 and
// then one ERROR event with a 410 Expired Status, as kube-apiserver answers
// it.
//
// Every write and flush must end within the watch write timeout, and never
// past the watch's end (writeWatchdog). So a client that stops reading is
// disconnected after the write timeout, or at its timeoutSeconds if that
// comes first, instead of holding a goroutine, a watch slot and its
// buffered events for ever.
func (c *call) watch() error {
	out, err := c.output()
	if err != nil {
		return err
	}
	o, err := watchOptions(c.r.URL.Query())
	var badRV *storage.InvalidResourceVersionError
	if err != nil && !errors.As(err, &badRV) {
		return err
	}
	fieldSel := o.FieldSelector
	if c.name != "" {
		// A watch on /watch/…/{name} is a watch of the collection for
		// one name; as kube's handler, a field selector beside it must
		// pin that name (one that does not parse gets its own error
		// below).
		kf, err := fields.ParseSelector(fieldSel)
		if err == nil {
			kf, err = kf.Transform(c.res.convertFieldLabel)
		}
		switch {
		case err != nil: // predicate, below, answers it
		case kf.Empty():
			fieldSel = object.FieldSelectorFromSet(map[string]string{"metadata.name": c.name}).String()
		default:
			if name, ok := kf.RequiresExactMatch("metadata.name"); !ok || name != c.name {
				return wire.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
			}
		}
	}
	pred, err := predicate(c.res, o.LabelSelector, fieldSel)
	if err != nil {
		return err
	}
	if badRV != nil {
		// kube's store parses the resourceVersion once its handler has
		// read the selectors, and its cacher's error is no API status:
		// a 500.
		return badRV.Status()
	}
	// A Table's options are read before the watch starts: a bad one is a
	// 400, not an event.
	var tableOpts tableOptions
	if out.form == formTable {
		if tableOpts, err = c.tableOptions(out); err != nil {
			return err
		}
	}
	if err := streamable(out); err != nil {
		return err
	}
	// As kube's: timeoutSeconds=0 (or none) is no client timeout, and the
	// server's own random one applies; a negative one ends the watch at
	// once.
	timeout := time.Duration(float64(c.s.minReq) * (rand.Float64() + 1))
	if o.TimeoutSeconds != nil && *o.TimeoutSeconds != 0 {
		timeout = time.Duration(*o.TimeoutSeconds) * time.Second
	}
	end := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(c.r.Context(), end)
	defer cancel()
	if timeout < 0 {
		// kube's watch of a negative timeoutSeconds ends before its
		// first event: an empty stream.
		(&eventWriter{call: c, out: out}).writeHeader()
		return nil
	}

	var (
		stream storage.EventStream
		beyond *wire.Status
	)
	switch {
	case o.Beyond != 0 && o.Mode == storage.ReadNotOlderThan:
		// Initial events at a revision no store reaches: kube's cacher
		// waits for it in vain, then ends the watch with its 504 as the
		// one event; serve does so without waiting.
		err := c.beyondRV(o.Beyond)
		if beyond, _ = err.(*wire.Status); beyond == nil {
			return err
		}
	case o.Beyond != 0:
		// The changes after a revision no store reaches: none, not even
		// a bookmark (each would be older), until the watch ends.
	default:
		stream, err = c.res.reader.WatchList(ctx, c.res.prefix(c.ns), o.WatchOptions(pred))
	}
	// As kube's cacher, a watch from a revision the history no longer
	// holds, or whose initial events wait for a revision the store does
	// not reach, starts and ends with that error as its one event (410
	// Expired, 504 Timeout "Too large resource version").
	var compacted *storage.CompactedError
	if err != nil && !errors.As(err, &compacted) && !errors.Is(err, storage.ErrTooLargeResourceVersion) {
		return storageError(err, c.res, "")
	}
	if stream != nil {
		defer stream.Close()
	}
	c.tr.Step("Watch started")
	rc := http.NewResponseController(c.w)
	ew := &eventWriter{call: c, out: out, tableOpts: tableOpts, allowBookmarks: o.AllowBookmarks,
		dog: newWriteWatchdog(rc.SetWriteDeadline, c.s.watchWrite, end)}
	ew.gzip = c.s.watchListGzip && isWatchList(o) && filters.AcceptsGzip(c.r)
	defer ew.end(rc)
	if b, ok := stream.(storage.Buffered); ok {
		ew.buffered = b.Buffered
	}
	ew.start()
	if compacted != nil {
		ew.writeError(wire.NewResourceExpired(tooOldMessage(compacted)))
		return nil
	}
	if err != nil {
		ew.writeError(tooLargeRV(err))
		return nil
	}
	if beyond != nil {
		ew.writeError(beyond)
		return nil
	}
	if stream == nil {
		<-ctx.Done()
		c.endWatch(ctx, ew, ctx.Err())
		return nil
	}
	var batch []storage.WatchEvent
	for {
		ev, err := stream.Next(ctx)
		if err != nil {
			c.endWatch(ctx, ew, err)
			return nil
		}
		if c.res.conv != nil && ew.buffered != nil && ew.buffered() {
			// Events waiting (a watch's initial events): their objects go
			// to the conversion webhook in one review, not one each.
			batch = append(batch[:0], ev)
			for len(batch) < watchConvBatch && ew.buffered() {
				if ev, err = stream.Next(ctx); err != nil {
					break
				}
				batch = append(batch, ev)
			}
			failed, ferr := c.res.preconvert(batch)
			for i, ev := range batch {
				ew.pending = len(batch) - i - 1
				if i == failed {
					// The webhook refused it already: its error ends the
					// watch, as write's would.
					ew.pending = 0
					st, ok := ferr.(*wire.Status)
					if !ok {
						st = wire.NewInternalError(ferr)
					}
					ew.writeError(st)
					return nil
				}
				if !ew.write(ev) {
					return nil
				}
			}
			if err != nil {
				c.endWatch(ctx, ew, err)
				return nil
			}
			continue
		}
		if !ew.write(ev) {
			return nil
		}
	}
}

// watchConvBatch is how many waiting events a watch of a resource whose
// CRD has a conversion webhook reads ahead to convert together (in
// reviews of convBatch objects).
const watchConvBatch = 256

// endWatch ends a watch whose stream returned err.
func (c *call) endWatch(ctx context.Context, ew *eventWriter, err error) {
	var compacted *storage.CompactedError
	switch {
	case errors.As(err, &compacted):
		ew.writeError(wire.NewResourceExpired(tooOldMessage(compacted)))
	case ctx.Err() != nil, errors.Is(err, storage.ErrWatchClosed):
		// timeout, client gone, or the reader ended the watch: a clean end
	default:
		ew.writeError(asStatus(storageError(err, c.res, "")))
	}
}

// eventWriter frames watch events onto the response.
type eventWriter struct {
	*call
	out output
	// tableOpts makes the Table of each event when out is one: with its
	// column definitions only in the first, as kube's.
	tableOpts      tableOptions
	allowBookmarks bool
	flusher        http.Flusher
	dog            *writeWatchdog
	failed         bool
	// buffered, if set, says the stream has the next event ready: the
	// flush waits for the end of the burst.
	buffered func() bool
	// pending is how many events of a batch read ahead (a conversion
	// webhook's, watch loop) are still to be written after this one.
	pending int
	// unflushed: bytes were written since the last flush.
	unflushed bool
	// burst holds the frames of a burst not yet written to the response
	// (see watchBurst); nil between bursts, so an idle watch holds none.
	burst *[]byte
	// gzip: the body is a series of gzip members, one per flush (see
	// watchgzip.go); gz is the member being written, nil between flushes.
	gzip bool
	gz   *gzip.Writer
}

func (ew *eventWriter) start() {
	ew.writeHeader()
	ew.flusher, _ = ew.w.(http.Flusher)
	ew.flush()
}

// writeHeader begins the stream: its media type and 200.
func (ew *eventWriter) writeHeader() {
	ct := mediaJSON
	if ew.out.proto {
		ct = mediaProto + ";stream=watch"
	}
	ew.w.Header().Set("Content-Type", ct)
	ew.w.Header().Set("Transfer-Encoding", "chunked")
	if ew.gzip {
		ew.w.Header().Set("Content-Encoding", "gzip")
		ew.w.Header().Add("Vary", "Accept-Encoding")
	}
	ew.w.WriteHeader(http.StatusOK)
}

// end finishes the stream once the watch returns: what its last burst
// holds is written, and the gzip member closed. These last bytes (and
// the end of the chunked stream, written after this) have a deadline of
// their own.
func (ew *eventWriter) end(rc *http.ResponseController) {
	ew.dog.stop()
	_ = rc.SetWriteDeadline(time.Now().Add(ew.s.watchWrite))
	ew.send()
	ew.releaseBurst()
	ew.endGzipMember()
}

func (ew *eventWriter) flush() {
	ew.send()
	ew.releaseBurst()
	ew.unflushed = false
	ew.dog.begin()
	defer ew.dog.done()
	if err := ew.endGzipMember(); err != nil {
		ew.failed = true
		return
	}
	if ew.flusher != nil {
		ew.flusher.Flush()
	}
}

// write sends ev and reports whether the stream is still writable.
func (ew *eventWriter) write(ev storage.WatchEvent) bool {
	if ev.Type == wire.Bookmark && !ew.allowBookmarks {
		return ew.skip() // bookmarks only go to clients that asked
	}
	if ew.out.partialList {
		// A PartialObjectMetadataList of an event's object, which is no
		// list: kube's encoder fails, and its watch ends there, having
		// sent nothing of it.
		return false
	}
	if ew.out.proto {
		return ew.writeProto(ev)
	}
	var obj []byte
	switch {
	case ev.Type == wire.Bookmark:
		// A Table watch gets each bookmark as a Table of one row, as kube
		// converts every event's object.
		obj = ew.bookmark(ev)
		if ew.out.form != formTable {
			return ew.line(ev.Type, obj)
		}
	case ev.Frame != nil && ew.out.form == formJSON && !ew.res.rewriteVersion:
		return ew.raw(ev.Frame)
	default:
		var err error
		if obj, err = ew.res.servedValue(ev.Object); err != nil {
			// A conversion webhook that fails ends the watch with its
			// error; the client lists again.
			st, ok := err.(*wire.Status)
			if !ok {
				st = wire.NewInternalError(err)
			}
			ew.writeError(st)
			return false
		}
	}
	switch ew.out.form {
	case formTable:
		t, err := ew.table(ew.tableOpts, [][]byte{obj}, wire.ListMeta{ResourceVersion: strconv.FormatInt(ev.Revision, 10)})
		if err != nil {
			ew.writeError(wire.NewInternalError(err))
			return false
		}
		ew.tableOpts.noHeaders = true
		b, err := json.Marshal(t)
		if err != nil {
			return false
		}
		obj = b
	case formPartial:
		b, err := partialObject(obj, ew.out.metaAPIVersion())
		if err != nil {
			ew.writeError(wire.NewInternalError(err))
			return false
		}
		obj = b
	}
	return ew.line(ev.Type, obj)
}

// bookmark renders a bookmark object of the resource's kind: only kind,
// apiVersion and metadata.resourceVersion, plus the initial-events-end
// annotation when it ends the initial events.
func (ew *eventWriter) bookmark(ev storage.WatchEvent) []byte {
	type meta struct {
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations,omitempty"`
	}
	b := struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Metadata   meta   `json:"metadata"`
	}{Kind: ew.res.kind, APIVersion: ew.res.apiVersion(), Metadata: meta{ResourceVersion: strconv.FormatInt(ev.Revision, 10)}}
	if ew.out.form == formPartial {
		b.Kind, b.APIVersion = "PartialObjectMetadata", ew.out.metaAPIVersion()
	}
	if ev.InitialEventsEnd {
		b.Metadata.Annotations = map[string]string{wire.AnnotationInitialEventsEnd: "true"}
	}
	out, _ := json.Marshal(b)
	return out
}

func (ew *eventWriter) line(t wire.EventType, obj []byte) bool {
	bp := ew.grow(wire.EventLineLen(t, obj))
	*bp = wire.AppendEventLine(*bp, t, obj)
	return ew.framed(bp)
}

// watchBurst is the size of the writes a burst of events (those the
// stream holds ready, as a watch-list's initial events) is gathered into
// before it goes to the response. Go's HTTP/2 server hands each write of
// a handler to its connection's goroutine and, that goroutine having
// nothing else queued, flushes it to the socket: one DATA frame, one TLS
// record and one system call an event, and as many wake-ups of the
// client's reader. A burst's events now go out 64 KiB at a time, the last
// of them at the flush that ends the burst (or at the watch's end).
const watchBurst = 64 << 10

var burstPool = sync.Pool{New: func() any { return newFrameBuf(watchBurst) }}

// grow returns the buffer to append a frame of n bytes to: the burst's,
// whose bytes are written first if the frame would not fit after them, or
// for a frame larger than a burst, a pooled buffer of its own. framed
// sends the frame on.
func (ew *eventWriter) grow(n int) *[]byte {
	if n > watchBurst {
		return frameBuf(n)
	}
	if ew.burst != nil && len(*ew.burst)+n > cap(*ew.burst) {
		ew.send()
	}
	if ew.burst == nil {
		ew.burst = burstPool.Get().(*[]byte)
	}
	return ew.burst
}

// framed sends on a frame appended to bp, from grow, and reports whether
// the stream is still writable.
func (ew *eventWriter) framed(bp *[]byte) bool {
	if bp != ew.burst {
		ew.send()
		ew.writeOut(*bp)
		putFrameBuf(bp)
	}
	return ew.appended()
}

// send writes what the burst holds to the response.
func (ew *eventWriter) send() {
	if ew.burst == nil || len(*ew.burst) == 0 {
		return
	}
	ew.writeOut(*ew.burst)
	*ew.burst = (*ew.burst)[:0]
}

// releaseBurst gives the burst's buffer back, its bytes sent.
func (ew *eventWriter) releaseBurst() {
	if ew.burst != nil {
		*ew.burst = (*ew.burst)[:0]
		burstPool.Put(ew.burst)
		ew.burst = nil
	}
}

// writeOut writes b to the stream's body, within the write timeout.
func (ew *eventWriter) writeOut(b []byte) {
	if ew.failed {
		return
	}
	ew.dog.begin()
	_, err := ew.body().Write(b)
	ew.dog.done()
	if err != nil {
		ew.failed = true
	}
}

// framePool holds the buffers of frames too large for a burst's (the
// initial events of a watch, or a watch-list's, whose frame no other
// watcher shares): sent, the buffer is used for the next, so that such
// frames are not left behind for the collector, which would scan the
// watch cache's heap for them.
var framePool sync.Pool // *[]byte

// maxPooledFrame bounds the buffers framePool keeps.
const maxPooledFrame = 256 << 10

// frameBuf returns an empty buffer of at least n bytes' capacity.
func frameBuf(n int) *[]byte {
	if n <= maxPooledFrame {
		if bp, ok := framePool.Get().(*[]byte); ok {
			*bp = (*bp)[:0]
			return bp
		}
		return newFrameBuf(max(n, 16<<10))
	}
	return newFrameBuf(n)
}

// newFrameBuf returns a new empty buffer of n bytes' capacity.
func newFrameBuf(n int) *[]byte {
	b := make([]byte, 0, n)
	return &b
}

// putFrameBuf gives bp back to framePool once its bytes are written
// (a Writer does not keep what it is given).
func putFrameBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledFrame {
		framePool.Put(bp)
	}
}

// raw sends the frame b (which the stream does not keep) and reports
// whether the stream is still writable.
func (ew *eventWriter) raw(b []byte) bool {
	if ew.failed {
		return false
	}
	if len(b) > watchBurst {
		ew.send()
		ew.writeOut(b)
	} else {
		bp := ew.grow(len(b))
		*bp = append(*bp, b...)
	}
	return ew.appended()
}

// appended ends the sending of a frame: the stream is flushed unless
// another event follows at once.
func (ew *eventWriter) appended() bool {
	if ew.failed {
		return false
	}
	ew.unflushed = true
	if !ew.more() {
		ew.flush()
	}
	return !ew.failed
}

// more reports whether another event follows at once: one of the batch
// being written, or one the stream holds ready.
func (ew *eventWriter) more() bool {
	return ew.pending > 0 || ew.buffered != nil && ew.buffered()
}

// skip is write for an event the client does not get: what was written
// before it still goes out once the stream has nothing more ready.
func (ew *eventWriter) skip() bool {
	if ew.unflushed && !ew.more() {
		ew.flush()
	}
	return !ew.failed
}

func (ew *eventWriter) writeError(st *wire.Status) {
	if ew.out.proto {
		if b, err := protoStatus(st); err == nil {
			ew.raw(protoWatchFrame(wire.Error, b))
		}
		return
	}
	b, _ := json.Marshal(st)
	ew.line(wire.Error, b)
}
