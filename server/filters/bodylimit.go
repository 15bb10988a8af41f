package filters

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/listwatch/listwatch/wire"
)

// DefaultMaxBodyBytes is kube-apiserver's limit on a request body (3 MiB),
// wire.MaxRequestBodyBytes.
const DefaultMaxBodyBytes = wire.MaxRequestBodyBytes

// BodyLimit refuses bodies over limit bytes (DefaultMaxBodyBytes if
// limit <= 0) with 413 Request Entity Too Large, before the handler runs:
//
//   - a declared Content-Length over the limit is refused after limit+1
//     bytes of it are read and discarded, as kube's handlers read a body
//     (limitedReadBody) before they answer 413 — but see below;
//   - a body of unknown length (chunked) is read here, at most limit+1
//     bytes, and handed on from memory when it fits — so memory per request
//     is bounded by the limit, and handlers never see a truncated body;
//   - a declared length within the limit is passed through behind
//     http.MaxBytesReader, as a second guard.
//
// Over HTTP/1.1, where the request and its answer share one byte stream,
// two improvements on kube-apiserver (see drainLen):
//
//   - a client that writes its whole body before it reads the answer
//     (Python's requests) blocks once the socket buffers are full, and
//     net/http, which discards at most 256 KiB of a body nothing read,
//     closes the connection under its write: the 413 is lost. serve reads
//     such a body whole, up to 2×limit in all, before it answers. Past
//     that the connection is closed, as kube's is; BodyDeadline bounds a
//     slow body (long-running requests, which it leaves unbounded, get
//     kube's limit+1);
//   - a client that sent Expect: 100-continue and a length over the limit
//     is answered without a read, so net/http sends no 100 Continue and
//     the client never sends the body (kube's read asks for it all).
func BodyLimit(limit int64) Filter {
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Body == nil || r.Body == http.NoBody:
				h.ServeHTTP(w, r)
			case r.ContentLength > limit:
				_, _ = io.CopyN(io.Discard, r.Body, drainLen(r, limit))
				writeStatus(w, r, wire.NewRequestEntityTooLarge(limit))
			case r.ContentLength >= 0:
				r2 := *r
				r2.Body = http.MaxBytesReader(w, r.Body, limit)
				h.ServeHTTP(w, &r2)
			default:
				buf, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
				if err != nil {
					writeStatus(w, r, wire.NewBadRequest("error reading request body: "+err.Error()))
					return
				}
				if int64(len(buf)) > limit {
					if drains(r) {
						_, _ = io.CopyN(io.Discard, r.Body, limit-1) // 2×limit in all
					}
					writeStatus(w, r, wire.NewRequestEntityTooLarge(limit))
					return
				}
				r2 := *r
				r2.Body = io.NopCloser(bytes.NewReader(buf))
				r2.ContentLength = int64(len(buf))
				r2.TransferEncoding = nil
				h.ServeHTTP(w, &r2)
			}
		})
	}
}

// drainLen is how much of a body declared over the limit to read before
// the 413 (see BodyLimit): over HTTP/1.1 and for a request that is not
// long-running, nothing if the client waits for 100 Continue, the whole
// declared length if it is at most 2×limit; else limit+1, as kube reads.
func drainLen(r *http.Request, limit int64) int64 {
	switch {
	case !drains(r):
		return limit + 1
	case strings.EqualFold(r.Header.Get("Expect"), "100-continue"):
		return 0
	case r.ContentLength <= 2*limit:
		return r.ContentLength
	}
	return limit + 1
}

// drains says whether an oversized body of r is read beyond kube's
// limit+1 bytes: over HTTP/1.x, where a client's unread body stands
// between it and the answer, and under BodyDeadline's read deadline
// (which long-running requests do not get).
func drains(r *http.Request) bool { return r.ProtoMajor == 1 && !IsLongRunning(r) }
