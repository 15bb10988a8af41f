package filters

import (
	"net/http"
	"slices"
	"sync"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
)

// Default in-flight limits: kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight, and our own caps on open watches, in
// all and per user.
const (
	DefaultMaxReadOnly       = 400
	DefaultMaxMutating       = 200
	DefaultMaxWatches        = 10000
	DefaultMaxWatchesPerUser = 1000
)

// InFlightLimits caps concurrent requests by kind. Zero means the default;
// a negative value means no limit.
type InFlightLimits struct {
	ReadOnly int // get, list (not watch)
	Mutating int // everything that writes
	// Watches caps long-running requests, which the other two exclude.
	Watches int
	// WatchesPerUser caps the long-running requests of one user, so that
	// one user cannot take every watch slot.
	WatchesPerUser int
}

func (l InFlightLimits) withDefaults() InFlightLimits {
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	return InFlightLimits{
		ReadOnly:       def(l.ReadOnly, DefaultMaxReadOnly),
		Mutating:       def(l.Mutating, DefaultMaxMutating),
		Watches:        def(l.Watches, DefaultMaxWatches),
		WatchesPerUser: def(l.WatchesPerUser, DefaultMaxWatchesPerUser),
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

// perUser counts the slots each user holds against a limit; a negative
// limit means none. Users are forgotten when they hold none, so its size is
// bounded by the requests in flight.
type perUser struct {
	limit int
	mu    sync.Mutex
	held  map[string]int // guarded by mu
}

func newPerUser(limit int) *perUser { return &perUser{limit: limit, held: map[string]int{}} }

func (p *perUser) tryAcquire(user string) bool {
	if p.limit < 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[user] >= p.limit {
		return false
	}
	p.held[user]++
	return true
}

func (p *perUser) release(user string) {
	if p.limit < 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[user]--; p.held[user] <= 0 {
		delete(p.held, user)
	}
}

// MaxInFlight refuses requests beyond the limits with 429 Too Many
// Requests and "Retry-After: 1". Read-only and mutating requests are limited
// separately, so a flood of writes cannot starve reads; long-running
// requests (watches) are exempt from both, as in kube-apiserver, and hold a
// slot of the watch limit and of their user's watch limit for their whole
// life instead. Like kube-apiserver, a member of system:masters that finds
// a limit full is served anyway: no user can lock the admin out. The
// watches of system:masters take no watch slot at all: the server's own
// informers (RBAC, admission) watch over loopback as such, and must not
// use up the slots the limit keeps for users.
func MaxInFlight(limits InFlightLimits) Filter {
	return func(h http.Handler) http.Handler {
		l := limits.withDefaults()
		readOnly, mutating, watches := newSemaphore(l.ReadOnly), newSemaphore(l.Mutating), newSemaphore(l.Watches)
		userWatches := newPerUser(l.WatchesPerUser)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			master := isMaster(r)
			if IsLongRunning(r) {
				if !master {
					name := userName(r)
					if !userWatches.tryAcquire(name) {
						tooManyRequests(w, r)
						return
					}
					defer userWatches.release(name)
				}
				if !master {
					if !watches.tryAcquire() {
						tooManyRequests(w, r)
						return
					}
					defer watches.release()
				}
				h.ServeHTTP(w, r)
				return
			}
			sem := readOnly
			if isMutating(r) {
				sem = mutating
			}
			if sem.tryAcquire() {
				defer sem.release()
			} else if !master {
				tooManyRequests(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

// userName is the name of the request's user, "" if none.
func userName(r *http.Request) string {
	if u, ok := request.UserFrom(r.Context()); ok {
		return u.Name
	}
	return ""
}

func isMaster(r *http.Request) bool {
	u, ok := request.UserFrom(r.Context())
	return ok && slices.Contains(u.Groups, auth.GroupMasters)
}

// tooManyRequests answers as kube's in-flight and priority-and-fairness
// filters refuse a request: 429 in plain text, Retry-After 1.
func tooManyRequests(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "1")
	writeText(w, http.StatusTooManyRequests, "Too many requests, please try again later.")
}
