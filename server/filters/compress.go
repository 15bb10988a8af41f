package filters

import (
	"bufio"
	"github.com/klauspost/compress/gzip"
	"net/http"
	"strings"
	"sync"
)

// CompressionThreshold is kube-apiserver's: a response body of at most
// this many bytes is sent as is, a larger one gzip-compressed (when the
// client accepts gzip).
const CompressionThreshold = 128 << 10

// gzipLevel is kube's: level 1 costs the least CPU for a ratio close to
// the higher levels'.
const gzipLevel = gzip.BestSpeed

var gzipWriters = sync.Pool{New: func() any {
	gw, _ := gzip.NewWriterLevel(nil, gzipLevel)
	return gw
}}

// gzipOutputBuffer is how much compressed output goes to the connection
// per write. Each write to an HTTP/2 response waits for the connection's
// goroutine to send it, so net/http's own 4 KiB would cost a round of
// goroutine hand-offs per 4 KiB of compressed body.
const gzipOutputBuffer = 32 << 10

var gzipOutputs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, gzipOutputBuffer) }}

// heldBuffers keep the held part of responses: a response over the
// threshold would otherwise grow a fresh buffer to 128 KiB on every
// request, which a LIST page spends more time on, counting the GC it
// causes, than on gzip.
var heldBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, CompressionThreshold)
	return &b
}}

// Compression gzip-compresses the response of a request whose
// Accept-Encoding lists gzip once its body exceeds CompressionThreshold,
// with Content-Encoding: gzip and Vary: Accept-Encoding, as kube-apiserver
// does with APIResponseCompression. It holds at most CompressionThreshold
// bytes of a response before deciding; a smaller response is sent
// unchanged when the handler returns. Long-running requests (watches) pass
// through untouched: kube-apiserver does not compress watch events.
//
// A Flush by the handler before the decision is deferred to it. Place
// Compression inside Timeout, so that a 504 replaces a response still held
// here.
func Compression() Filter {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if IsLongRunning(r) || !AcceptsGzip(r) {
				h.ServeHTTP(w, r)
				return
			}
			cw := &compressWriter{w: w}
			h.ServeHTTP(cw, r)
			// Not deferred: after a panic the held response is dropped, so
			// that Recovery can still answer 500.
			cw.finish()
		})
	}
}

// AcceptsGzip reads Accept-Encoding as kube does: gzip must be one of the
// comma-separated tokens, exactly (a quality value disqualifies it).
func AcceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(tok) == "gzip" {
				return true
			}
		}
	}
	return false
}

// compressWriter holds the response until its body exceeds
// CompressionThreshold (then gzips it) or the handler returns (then sends
// it as is). Used from the handler's goroutine only.
type compressWriter struct {
	w    http.ResponseWriter
	code int     // 0 until WriteHeader
	buf  []byte  // held body, at most CompressionThreshold bytes
	held *[]byte // buf's pooled backing array, nil when buf is nil

	decided bool
	gz      *gzip.Writer  // nil: plain
	zout    *bufio.Writer // gz's output, gzipOutputBuffer bytes to w per write
	err     error         // first write error after the decision
}

func (w *compressWriter) Header() http.Header { return w.w.Header() }

func (w *compressWriter) WriteHeader(code int) {
	if w.decided {
		w.w.WriteHeader(code) // net/http logs the superfluous call
		return
	}
	if code >= 100 && code < 200 {
		w.w.WriteHeader(code) // informational: sent now, not the final status
		return
	}
	if w.code == 0 {
		w.code = code
	}
}

func (w *compressWriter) Write(p []byte) (int, error) {
	if w.decided {
		return w.write(p)
	}
	if len(w.buf)+len(p) <= CompressionThreshold {
		if w.buf == nil {
			w.held = heldBuffers.Get().(*[]byte)
			w.buf = (*w.held)[:0]
		}
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	w.decide(w.Header().Get("Content-Encoding") == "" && bodyAllowed(w.status()))
	_, err := w.write(w.buf)
	w.release()
	if err != nil {
		return 0, err
	}
	return w.write(p)
}

// release returns the held buffer to the pool: the writers below copy
// what they are given, so nothing refers to it any more.
func (w *compressWriter) release() {
	if w.held != nil {
		*w.held = w.buf[:0]
		heldBuffers.Put(w.held)
		w.held = nil
	}
	w.buf = nil
}

func (w *compressWriter) write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	var n int
	if w.gz != nil {
		n, w.err = w.gz.Write(p)
	} else {
		n, w.err = w.w.Write(p)
	}
	return n, w.err
}

// decide sends the header, with the gzip headers if gz.
func (w *compressWriter) decide(gz bool) {
	w.decided = true
	if gz {
		h := w.Header()
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		h.Del("Content-Length")
		w.zout = gzipOutputs.Get().(*bufio.Writer)
		w.zout.Reset(w.w)
		w.gz = gzipWriters.Get().(*gzip.Writer)
		w.gz.Reset(w.zout)
	}
	w.w.WriteHeader(w.status())
}

func (w *compressWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// finish sends a response still held, or ends the gzip stream.
func (w *compressWriter) finish() {
	if !w.decided {
		if w.code == 0 && len(w.buf) == 0 {
			return // nothing written: net/http sends its 200
		}
		w.decide(false)
		_, _ = w.write(w.buf)
		w.release()
		return
	}
	if w.gz != nil {
		if err := w.gz.Close(); err == nil {
			_ = w.zout.Flush()
		}
		w.gz.Reset(nil)
		gzipWriters.Put(w.gz)
		w.gz = nil
		w.zout.Reset(nil)
		gzipOutputs.Put(w.zout)
		w.zout = nil
	}
}

// Flush before the decision does nothing (finish or the threshold sends the
// held bytes); after it, it flushes the gzip stream and the connection.
func (w *compressWriter) Flush() {
	if !w.decided {
		return
	}
	if w.gz != nil && w.err == nil {
		if w.err = w.gz.Flush(); w.err == nil {
			w.err = w.zout.Flush()
		}
	}
	_ = http.NewResponseController(w.w).Flush()
}

func (w *compressWriter) Unwrap() http.ResponseWriter { return w.w }

// GzipSelf is implemented by the response writer of a request whose
// response the Compression filter would gzip: the handler may compress
// the body itself instead (from compressed parts it keeps, say).
type GzipSelf interface {
	// WouldGzip reports whether the response would be gzipped if large
	// enough, and has not started: SendGzipped may be called.
	WouldGzip() bool
	// SendGzipped, called instead of WriteHeader, sends the header with
	// status code and Content-Encoding: gzip, and passes the body, which
	// the handler compresses, through unchanged. It reports false, doing
	// nothing, when WouldGzip is false.
	SendGzipped(code int) bool
}

// WouldGzip implements GzipSelf.
func (w *compressWriter) WouldGzip() bool { return !w.decided && w.code == 0 && len(w.buf) == 0 }

// SendGzipped implements GzipSelf.
func (w *compressWriter) SendGzipped(code int) bool {
	if !w.WouldGzip() {
		return false
	}
	h := w.Header()
	h.Set("Content-Encoding", "gzip")
	h.Add("Vary", "Accept-Encoding")
	h.Del("Content-Length")
	w.decided = true
	w.w.WriteHeader(code)
	return true
}

// BuffersWrites reports whether small writes are cheap: while the response
// is held, or gzipped (the gzip writer copies them into its window), but
// not once it goes to the connection as is.
func (w *compressWriter) BuffersWrites() bool { return !w.decided || w.gz != nil }

// bodyAllowed reports whether a response with status code may have a body.
func bodyAllowed(code int) bool {
	return code != http.StatusNoContent && code != http.StatusNotModified
}
