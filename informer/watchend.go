package informer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// DefaultRelistAfterWatchFailures bounds how many watches in a row may fail
// (fail to open, or break before delivering any event) before the
// reflector gives up on resuming and relists. With the default backoff
// (0.8s doubling to 30s, jittered) ten attempts span about three minutes:
// longer than kube-apiserver's watch cache keeps history for a busy
// resource (75s at least), so by then resuming is unlikely to work, and a
// LIST either succeeds (a fresh baseline) or reports, through
// LastSyncError, what is wrong. Fewer would turn short outages back into
// relist storms; more would leave a broken path (say a proxy that cuts
// every long request) unreported for too long.
const DefaultRelistAfterWatchFailures = 10

// shortWatch is how soon a watch that delivered nothing may end before
// the next one waits for the backoff, as client-go's "very short watch".
const shortWatch = time.Second

// watchEnd is what the reflector does after a watch ended.
type watchEnd int

const (
	// rewatch at once: the server or our deadline ended the watch.
	rewatch watchEnd = iota
	// retry the watch after the backoff: a transient failure (network
	// error, truncated stream, 5xx, 429, 408).
	retryWatch
	// relist: the resourceVersion cannot be resumed from.
	relist
)

// classifyWatchEnd decides how to go on after a watch ended with err (nil
// or io.EOF: a clean end). reason is set for relist.
func classifyWatchEnd(err error) (watchEnd, RelistReason) {
	code := int(wire.CodeOf(err))
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, context.DeadlineExceeded):
		return rewatch, ""
	case isGone(err):
		return relist, RelistExpired
	case refusesResourceVersion(err):
		return relist, RelistResourceVersionRefused
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests:
		return relist, RelistWatchRefused
	default:
		return retryWatch, ""
	}
}

// refusesResourceVersion: the server will not serve this resourceVersion
// (malformed, or newer than it has: kube answers 504 Timeout with cause
// ResourceVersionTooLarge).
func refusesResourceVersion(err error) bool {
	if client.IsBadRequest(err) || client.IsInvalid(err) {
		return true
	}
	var st *wire.Status
	if !errors.As(err, &st) || st.Details == nil {
		return false
	}
	for _, c := range st.Details.Causes {
		if c.Type == "ResourceVersionTooLarge" {
			return true
		}
	}
	return false
}

// maxRetryAfter caps the delay a server may ask for, so that a broken or
// hostile server cannot park the reflector for hours.
const maxRetryAfter = 5 * time.Minute

// retryAfter is the delay a 429 (or 5xx) asked for with Retry-After, at
// most maxRetryAfter, or 0.
func retryAfter(err error) time.Duration {
	var st *wire.Status
	if !errors.As(err, &st) || st.Details == nil || st.Details.RetryAfterSeconds <= 0 {
		return 0
	}
	return min(time.Duration(st.Details.RetryAfterSeconds)*time.Second, maxRetryAfter)
}
