package informer

import "time"

// RelistReason says why a reflector stopped watching and listed again.
type RelistReason string

const (
	// RelistExpired: the server no longer has the history the watch
	// needs (410 Gone or Expired, as a response or as an ERROR event).
	RelistExpired RelistReason = "expired"
	// RelistResourceVersionRefused: the server refused the watch's
	// resourceVersion (400, 422, or 504 with cause ResourceVersionTooLarge).
	RelistResourceVersionRefused RelistReason = "resource_version_refused"
	// RelistWatchRefused: the server refused the watch outright (another
	// 4xx, such as 401, 403 or 404); the list reports the cause.
	RelistWatchRefused RelistReason = "watch_refused"
	// RelistWatchFailures: ReflectorOptions.RelistAfterWatchFailures
	// watches in a row failed without delivering an event.
	RelistWatchFailures RelistReason = "watch_failures"
)

// MetricsProvider makes the metrics of one named reflector or informer.
// ReflectorOptions.Metrics takes one; NewPrometheusProvider exports them
// to Prometheus. NewReflector and New call it once each and start
// nothing.
type MetricsProvider interface {
	// NewReflectorMetrics returns the event sink of the reflector called
	// name; snapshot may be called at any time, from any goroutine, to read
	// its gauges.
	NewReflectorMetrics(name string, snapshot func() ReflectorSnapshot) ReflectorMetrics
	// NewInformerMetrics registers the gauges of the informer called name.
	NewInformerMetrics(name string, snapshot func() InformerSnapshot)
}

// ReflectorMetrics receives a reflector's events, one at a time, never
// concurrently, though not all from one goroutine (a LIST page is read on
// a goroutine of its own). Methods must be fast and must not call back
// into the reflector.
type ReflectorMetrics interface {
	// Listed: one LIST request (one page) ended; items is its length (0
	// when it failed), d the time spent reading it, not handing it on.
	Listed(items int, d time.Duration, err error)
	// Watched: one watch ended (or failed to open, with events 0 and
	// err set); short means it ended cleanly within a second with no event.
	Watched(events int, d time.Duration, short bool, err error)
	// Relisted: the reflector left the watch to list again.
	Relisted(reason RelistReason)
}

// ReflectorSnapshot is a reflector's state, read at scrape time.
type ReflectorSnapshot struct {
	// LastSyncResourceVersion is the newest resourceVersion observed.
	LastSyncResourceVersion string
}

// InformerSnapshot is an informer's state, read at scrape time.
type InformerSnapshot struct {
	// Handlers is the number of registered handlers; HandlerQueueDepth is
	// the total of the notifications they have not been handed yet, and
	// MaxHandlerQueueDepth the largest one handler's backlog.
	Handlers, HandlerQueueDepth, MaxHandlerQueueDepth int
	// QueueDepth is the number of keys waiting in the delta queue.
	QueueDepth int
}

// noMetrics is the MetricsProvider of a nil ReflectorOptions.Metrics.
type noMetrics struct{}

func (noMetrics) NewReflectorMetrics(string, func() ReflectorSnapshot) ReflectorMetrics {
	return noMetrics{}
}
func (noMetrics) NewInformerMetrics(string, func() InformerSnapshot) {}
func (noMetrics) Listed(int, time.Duration, error)                   {}
func (noMetrics) Watched(int, time.Duration, bool, error)            {}
func (noMetrics) Relisted(RelistReason)                              {}

var (
	_ MetricsProvider  = noMetrics{}
	_ ReflectorMetrics = noMetrics{}
)

// metricsSnapshot reads the informer's gauges. It takes mu, then each
// listener's counter, and the queue's lock on its own (lock order).
func (i *Informer[T]) metricsSnapshot() InformerSnapshot {
	s := InformerSnapshot{QueueDepth: i.queue.Len()}
	i.mu.RLock()
	defer i.mu.RUnlock()
	for l := range i.listeners {
		n := int(l.backlog.Load())
		s.Handlers++
		s.HandlerQueueDepth += n
		s.MaxHandlerQueueDepth = max(s.MaxHandlerQueueDepth, n)
	}
	return s
}
