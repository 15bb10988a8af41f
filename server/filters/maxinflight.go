package filters

import (
	"net/http"
	"slices"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// Default in-flight limits: kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight, and our own cap on open watches.
const (
	DefaultMaxReadOnly = 400
	DefaultMaxMutating = 200
	DefaultMaxWatches  = 10000
)

// InFlightLimits caps concurrent requests by kind. Zero means the default;
// a negative value means no limit.
type InFlightLimits struct {
	ReadOnly int // get, list (not watch)
	Mutating int // everything that writes
	Watches  int // long-running requests, which the other two exclude
}

func (l InFlightLimits) withDefaults() InFlightLimits {
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	return InFlightLimits{
		ReadOnly: def(l.ReadOnly, DefaultMaxReadOnly),
		Mutating: def(l.Mutating, DefaultMaxMutating),
		Watches:  def(l.Watches, DefaultMaxWatches),
	}
}

// semaphore is a counting semaphore; nil means unlimited.
type semaphore chan struct{}

func newSemaphore(n int) semaphore {
	if n < 0 {
		return nil
	}
	return make(semaphore, n)
}

func (s semaphore) tryAcquire() bool {
	if s == nil {
		return true
	}
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s semaphore) release() {
	if s != nil {
		<-s
	}
}

// WithMaxInFlight refuses requests beyond the limits with 429 Too Many
// Requests and "Retry-After: 1". Read-only and mutating requests are limited
// separately, so a flood of writes cannot starve reads; long-running
// requests (watches) hold a slot of the watch limit for their whole life and
// none of the others. Like kube-apiserver, a member of system:masters that
// finds the read-only or mutating limit full is served anyway.
func WithMaxInFlight(h http.Handler, limits InFlightLimits) http.Handler {
	l := limits.withDefaults()
	readOnly, mutating, watches := newSemaphore(l.ReadOnly), newSemaphore(l.Mutating), newSemaphore(l.Watches)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsLongRunning(r) {
			if !watches.tryAcquire() {
				tooManyRequests(w)
				return
			}
			defer watches.release()
			h.ServeHTTP(w, r)
			return
		}
		sem := readOnly
		if isMutating(r) {
			sem = mutating
		}
		if sem.tryAcquire() {
			defer sem.release()
		} else if !isMaster(r) {
			tooManyRequests(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func isMaster(r *http.Request) bool {
	u, ok := request.UserFrom(r.Context())
	return ok && slices.Contains(u.Groups, auth.GroupMasters)
}

func tooManyRequests(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeStatus(w, wire.NewTooManyRequests(1))
}
