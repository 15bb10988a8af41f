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
//   - a declared Content-Length over the limit is refused once limit+1
//     bytes of it are read and discarded, as kube's handlers read a body
//     (limitedReadBody) before they answer 413;
//   - a body of unknown length (chunked) is read here, at most limit+1
//     bytes, and handed on from memory when it fits — so memory per request
//     is bounded by the limit, and handlers never see a truncated body;
//   - a declared length within the limit is passed through behind
//     http.MaxBytesReader, as a second guard.
//
// Before a 413, the rest of a body up to 2×limit in all is read and
// discarded too, unless the client sent Expect: 100-continue (it reads
// the answer before it sends). That is an improvement on kube-apiserver:
// an HTTP/1.1 client that writes its whole body before it reads (Python's
// requests) gets the 413 however full the socket buffers are, where net/
// http would otherwise close the connection under its write once more
// than 256 KiB are left unread. Past 2×limit the connection is closed, as
// kube's is; the read deadline (BodyDeadline) bounds a slow body.
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
				// An HTTP/1.1 client that does not wait for 100-continue
				// writes its whole body before it reads the answer. Read
				// nothing and it blocks once the socket buffers are full,
				// net/http closes the connection under it, and the 413 is
				// lost. Reading what kube reads leaves it little enough to
				// write; nothing is held.
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
					_, _ = io.CopyN(io.Discard, r.Body, drainLen(r, limit)-(limit+1))
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

// drainLen is how much of an oversized body to read before the 413: the
// whole declared length (2×limit for one of unknown length) when that is
// at most 2×limit and the client is not waiting for 100 Continue, else
// limit+1 (what kube reads).
func drainLen(r *http.Request, limit int64) int64 {
	n := r.ContentLength
	if n < 0 {
		n = 2 * limit
	}
	if n > 2*limit || strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return limit + 1
	}
	return n
}
