package server

import (
	"github.com/klauspost/compress/gzip"
	"io"
	"sync"

	"github.com/listwatch/listwatch/server/storage"
)

// Watch-list streams (sendInitialEvents=true with bookmarks: an informer's
// initial list and what follows) are gzipped for clients that send
// Accept-Encoding: gzip, as kube-apiserver 1.37 does (its
// WatchListCompression feature, on by default). Plain watches are not.
//
// As kube's, the body is a series of gzip members, one per flush: each
// burst of events is compressed and closed as a member before it is
// flushed, so the client can decode everything it has received, and an
// idle watch holds no compressor. Readers of gzip (Go's gzip.Reader, which
// net/http's transport uses, and every other conforming one) read
// concatenated members as one stream.

// isWatchList reports whether a watch is a watch-list request, as kube
// tells them: sendInitialEvents=true and allowWatchBookmarks=true.
func isWatchList(o storage.ReadSpec) bool {
	return o.SendInitialEvents != nil && *o.SendInitialEvents && o.AllowBookmarks
}

var watchGzipPool = sync.Pool{New: func() any {
	// kube's level for watch-list streams and responses alike.
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// body is where the next bytes of the stream go: a gzip member (begun on
// first use) or the response.
func (ew *eventWriter) body() io.Writer {
	if !ew.gzip {
		return ew.w
	}
	if ew.gz == nil {
		ew.gz = watchGzipPool.Get().(*gzip.Writer)
		ew.gz.Reset(ew.w)
	}
	return ew.gz
}

// endGzipMember closes the member being written, if any, writing its
// trailer to the response, and returns the compressor to the pool.
//
// The member's data is sync-flushed before the member is closed, as
// kube's writer does: a reader such as Go's gzip.Reader hands out the
// data of a member's final deflate block only together with its end, and
// then waits for the next member's header before returning — so data in
// the final block would reach the client only with the next event.
func (ew *eventWriter) endGzipMember() error {
	if ew.gz == nil {
		return nil
	}
	err := ew.gz.Flush()
	if cerr := ew.gz.Close(); err == nil {
		err = cerr
	}
	ew.gz.Reset(nil)
	watchGzipPool.Put(ew.gz)
	ew.gz = nil
	return err
}
