package filters

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/listwatch/listwatch/wire"
)

// DefaultRequestTimeout is kube-apiserver's --request-timeout.
const DefaultRequestTimeout = 60 * time.Second

// timeoutMessage is kube's text for the 504 of a request past its deadline.
const timeoutMessage = "Timeout: request did not complete within requested timeout - context deadline exceeded"

// Timeout gives each request that is not long-running (IsLongRunning) d
// (DefaultRequestTimeout if d <= 0) to finish, and answers 504 Timeout when
// the handler has not: its context is cancelled at d (and carries a
// deadline of d plus timeoutGrace, as a backstop). Watches are passed
// through untouched: they stream and end on their own timeoutSeconds.
//
// The handler runs on its own goroutine (one kept from an earlier
// request when one is waiting: see workers). When the deadline passes first:
// if the handler has not started its response, the client gets the 504 and
// every later write by the handler fails with http.ErrHandlerTimeout; if it
// has, the connection is aborted (panic(http.ErrAbortHandler)), because a
// status cannot be changed once sent. The handler goroutine is not killed:
// it must return when its context ends. A panic in the handler is re-raised
// on the serving goroutine as a *HandlerPanic carrying the original stack.
func Timeout(d time.Duration) Filter {
	if d <= 0 {
		d = DefaultRequestTimeout
	}
	return func(h http.Handler) http.Handler {
		workers := newWorkers(workerIdle)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if IsLongRunning(r) {
				h.ServeHTTP(w, r)
				return
			}
			d := d
			// As kube's WithRequestDeadline: the request's own timeout
			// parameter (client-go's Timeout, kubectl's --request-timeout),
			// if shorter than the server's, is the deadline.
			t, err := timeoutParameter(r)
			if err != nil {
				refuseTimeout(w, r, err)
				return
			}
			if t > 0 && t < d {
				d = t
			}
			// The filter's own timer decides; it marks the writer timed out
			// before it cancels the handler's context, so a handler that wakes
			// on ctx.Done() always finds its writes refused, never half-sent.
			// The context's own deadline is only a backstop, timeoutGrace later.
			timer := time.NewTimer(d)
			defer timer.Stop()
			ctx, cancel := context.WithDeadline(r.Context(), time.Now().Add(d+timeoutGrace))
			defer cancel()
			tw := &timeoutWriter{w: w, r: r, header: make(http.Header)}
			done := make(chan struct{})
			panicked := make(chan *HandlerPanic, 1)
			workers.run(func() {
				defer close(done)
				defer func() {
					if p := recover(); p != nil {
						if p == http.ErrAbortHandler {
							panicked <- &HandlerPanic{Value: p}
							return
						}
						panicked <- newHandlerPanic(p)
					}
				}()
				h.ServeHTTP(tw, r.WithContext(ctx))
			})
			select {
			case <-done:
				select {
				case p := <-panicked:
					if p.Value == http.ErrAbortHandler {
						panic(http.ErrAbortHandler)
					}
					panic(p)
				default:
				}
				tw.finish()
			case <-timer.C:
				go logLatePanic(done, panicked, r)
				tw.timeout(cancel)
			}
		})
	}
}

// timeoutGrace is how much later than the filter's timer the handler's
// context deadline is set, so that the timer, not the context, fires first.
const timeoutGrace = time.Second

// logLatePanic waits for a timed-out handler and logs a panic that nobody
// is left to re-raise. It ends when the handler does.
func logLatePanic(done <-chan struct{}, panicked <-chan *HandlerPanic, r *http.Request) {
	<-done
	select {
	case p := <-panicked:
		if p.Value != http.ErrAbortHandler {
			slog.Error("panic in handler after timeout", "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
		}
	default:
	}
}

// HandlerPanic is a panic caught on one goroutine and re-raised on another.
type HandlerPanic struct {
	Value any
	Stack []byte
}

func newHandlerPanic(v any) *HandlerPanic {
	buf := make([]byte, 64<<10)
	return &HandlerPanic{Value: v, Stack: buf[:runtime.Stack(buf, false)]}
}

func (p *HandlerPanic) String() string { return fmt.Sprint(p.Value) }

// timeoutWriter lets the handler write until timeout() and never after.
// The handler gets its own header map, copied out on WriteHeader (or when
// it returns without writing), so a handler still running after the timeout
// cannot race with the 504. Header changes after WriteHeader are lost, as
// they would be on the wire (trailers are not supported here).
type timeoutWriter struct {
	w      http.ResponseWriter
	r      *http.Request // the request, for the Status's form
	header http.Header   // owned by the handler goroutine

	mu          sync.Mutex // guards the fields below and every use of w
	wroteHeader bool
	timedOut    bool
}

func (tw *timeoutWriter) Header() http.Header { return tw.header }

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.writeHeaderLocked(code)
}

func (tw *timeoutWriter) writeHeaderLocked(code int) {
	if tw.timedOut || tw.wroteHeader {
		return
	}
	tw.wroteHeader = true
	maps.Copy(tw.w.Header(), tw.header)
	tw.w.WriteHeader(code)
}

func (tw *timeoutWriter) Write(b []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	tw.writeHeaderLocked(http.StatusOK)
	return tw.w.Write(b)
}

func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return
	}
	tw.writeHeaderLocked(http.StatusOK)
	_ = http.NewResponseController(tw.w).Flush()
}

// finish hands on the headers of a handler that returned without writing,
// so net/http sends them with its implicit 200.
func (tw *timeoutWriter) finish() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if !tw.wroteHeader && !tw.timedOut {
		maps.Copy(tw.w.Header(), tw.header)
	}
}

// timeout refuses all further writes, then cancels the handler's context,
// then answers 504, or aborts the connection if the handler had begun its
// response. Called on the serving goroutine.
func (tw *timeoutWriter) timeout(cancel context.CancelFunc) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.timedOut = true
	cancel()
	if tw.wroteHeader {
		panic(http.ErrAbortHandler)
	}
	writeJSONStatus(tw.w, tw.r, wire.NewTimeout(timeoutMessage))
}
