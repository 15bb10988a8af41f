package client

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// When a request is retried, as client-go v0.37's rest.Request decides
// (rest/with_retry.go IsNextRetry and checkWait, rest/request.go):
//
//   - Any request, whatever its method, watches included, answered 429 or
//     any status >= 500 with a Retry-After header holding an integer, is
//     sent again after that many seconds (a negative count: at once). The
//     body is a []byte, so re-sending it is safe, as client-go's bodyBytes.
//   - A GET (not a watch) whose connection failed before an answer came, with
//     "connection reset by peer", an EOF, a broken or closed connection, an
//     HTTP/2 GOAWAY or "http2: client connection lost", is sent again after
//     one second. Writes are not: they may have been carried out.
//   - A watch whose connection failed with one of those EOF-like errors or
//     timed out is sent again after one second.
//
// At most maxRetries retries follow the first attempt. Every attempt waits
// on the rate limiter and stops when the request's context ends.

// retryAfterResponse is the delay before a request answered resp (not
// 2xx) is sent again, or -1 for none.
func retryAfterResponse(resp *http.Response) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return -1
	}
	h := resp.Header.Get("Retry-After")
	if h == "" {
		return -1
	}
	n, err := strconv.Atoi(h)
	if err != nil {
		return -1
	}
	return max(time.Duration(n)*time.Second, 0)
}

// connectionRetryDelay is client-go's delay before retrying a request that
// failed without an answer (its synthesized "Retry-After: 1").
const connectionRetryDelay = time.Second

// retryAfterError is the delay before r, which failed with err and no
// answer, is sent again, or -1 for none.
func retryAfterError(r request, err error) time.Duration {
	switch {
	case r.watch:
		if isProbableEOF(err) || isTimeout(err) {
			return connectionRetryDelay
		}
	case r.method == http.MethodGet:
		if isConnectionReset(err) || isProbableEOF(err) || isHTTP2ConnectionLost(err) {
			return connectionRetryDelay
		}
	}
	return -1
}

// isConnectionReset is apimachinery's net.IsConnectionReset: ECONNRESET
// anywhere in the chain.
func isConnectionReset(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && errno == syscall.ECONNRESET
}

// isHTTP2ConnectionLost is apimachinery's net.IsHTTP2ConnectionLost.
func isHTTP2ConnectionLost(err error) bool {
	return strings.Contains(err.Error(), "http2: client connection lost")
}

// isTimeout is apimachinery's net.IsTimeout: a net.Error that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isProbableEOF is apimachinery's net.IsProbableEOF: the errors Go's HTTP
// stack returns when the server closed the connection.
func isProbableEOF(err error) bool {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	msg := err.Error()
	switch {
	case err == io.EOF, err == io.ErrUnexpectedEOF: //nolint:errorlint // apimachinery compares exactly
		return true
	case msg == "http: can't write HTTP request on broken connection",
		strings.Contains(msg, "http2: server sent GOAWAY and closed the connection"),
		strings.Contains(msg, "connection reset by peer"),
		strings.Contains(strings.ToLower(msg), "use of closed network connection"):
		return true
	}
	return false
}

// withPrevious is client-go's WrapPreviousError: when a retried request
// finally fails with an error other than the one that made it retry (the
// context ending during the wait, say), the earlier error is named too.
// The result unwraps to err.
func withPrevious(err, prev error) error {
	if prev == nil || err.Error() == prev.Error() {
		return err
	}
	var uerr *url.Error
	if errors.As(prev, &uerr) && uerr.Err != nil {
		prev = uerr.Err
	}
	return &previousError{err: err, prev: prev}
}

type previousError struct{ err, prev error }

func (e *previousError) Error() string {
	return e.err.Error() + " - error from a previous attempt: " + e.prev.Error()
}

func (e *previousError) Unwrap() error { return e.err }
