package informer

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
	"time"

	"github.com/listwatch/listwatch/client"
)

// goneLoopThreshold is how many 410s in a row, with no watch event in
// between, make the reflector call it a loop rather than bad luck.
const goneLoopThreshold = 3

// syncFailure is why a reflector cannot sync, in words an operator can act on.
func (r *Reflector[T]) syncFailure(err error) (class, why string, level slog.Level) {
	switch {
	case client.IsForbidden(err):
		return "forbidden", "the server forbids this client to list or watch the resource (403): grant list and watch permission to its identity", slog.LevelError
	case client.IsUnauthorized(err):
		return "unauthorized", "the server does not accept the client's credentials (401)", slog.LevelError
	case isGone(err) && r.goneInARow >= goneLoopThreshold:
		return "gone-loop", "the server keeps answering 410 Gone/Expired: its watch history is shorter than the time a list and a new watch take (compaction too aggressive, or listing too slow)", slog.LevelError
	case isGone(err):
		return "gone", "the resource version expired (410); relisting from the latest state", slog.LevelInfo
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection-refused", "cannot reach the API server: connection refused", slog.LevelError
	case client.IsTooManyRequests(err):
		return "throttled", "the server is throttling the client (429)", slog.LevelWarn
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", "a request to the server timed out", slog.LevelWarn
	default:
		return "error", "list or watch failed", slog.LevelWarn
	}
}

// recordError remembers err for LastSyncError and logs why the reflector
// cannot sync: at once when the cause changes, else at most every LogEvery.
func (r *Reflector[T]) recordError(err error) {
	r.mu.Lock()
	r.lastErr = err
	if isGone(err) {
		r.goneInARow++
	} else {
		r.goneInARow = 0
	}
	class, why, level := r.syncFailure(err)
	now := time.Now()
	if class == r.logClass && now.Sub(r.loggedAt) < r.opts.LogEvery {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	suppressed := r.suppressed
	r.logClass, r.loggedAt, r.suppressed = class, now, 0
	r.mu.Unlock()
	r.logger.Log(context.Background(), level, "cannot sync: "+why,
		"cause", class, "err", err, "suppressedSinceLastLog", suppressed)
}
