package filters

import (
	"bytes"
	"io"
	"net/http"

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
				_, _ = io.CopyN(io.Discard, r.Body, limit+1)
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
