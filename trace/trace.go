// Package trace records the steps of a request and logs them only when the
// whole took longer than a threshold, as kube-apiserver's utiltrace does
// for slow LISTs ("Trace[…]: … (500ms)"). A trace is cheap when fast: a
// slice of steps and no log line.
//
//	tr := trace.New("List", slog.String("resource", "configmaps"))
//	defer tr.LogIfLong(ctx, logger, 500*time.Millisecond)
//	… tr.Step("read from cache", slog.Int("items", n)) …
package trace

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultThreshold is kube-apiserver's threshold for slow requests.
const DefaultThreshold = 500 * time.Millisecond

// Trace is the record of one operation. It is safe for concurrent use.
type Trace struct {
	name  string
	attrs []slog.Attr
	start time.Time

	mu    sync.Mutex // guards steps
	steps []step
}

type step struct {
	at    time.Time
	msg   string
	attrs []slog.Attr
}

// New starts a trace now.
func New(name string, attrs ...slog.Attr) *Trace {
	return &Trace{name: name, attrs: attrs, start: time.Now()}
}

// Step records that msg happened now.
func (t *Trace) Step(msg string, attrs ...slog.Attr) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.steps = append(t.steps, step{at: time.Now(), msg: msg, attrs: attrs})
	t.mu.Unlock()
}

// Elapsed is the time since New.
func (t *Trace) Elapsed() time.Duration { return time.Since(t.start) }

// LogIfLong logs the trace with every step's offset and duration if it
// has run for at least threshold. It returns whether it logged.
func (t *Trace) LogIfLong(ctx context.Context, logger *slog.Logger, threshold time.Duration) bool {
	if t == nil {
		return false
	}
	total := time.Since(t.start)
	if total < threshold {
		return false
	}
	if logger == nil {
		logger = slog.Default()
	}
	t.mu.Lock()
	steps := make([]any, 0, len(t.steps))
	prev := t.start
	for i, s := range t.steps {
		g := []any{
			slog.String("msg", s.msg),
			slog.Duration("at", s.at.Sub(t.start)),
			slog.Duration("took", s.at.Sub(prev)),
		}
		for _, a := range s.attrs {
			g = append(g, a)
		}
		steps = append(steps, slog.Group(stepKey(i), g...))
		prev = s.at
	}
	t.mu.Unlock()
	args := make([]any, 0, len(t.attrs)+len(steps)+2)
	args = append(args, slog.String("trace", t.name), slog.Duration("total", total))
	for _, a := range t.attrs {
		args = append(args, a)
	}
	args = append(args, steps...)
	logger.WarnContext(ctx, "slow operation", args...)
	return true
}

func stepKey(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return "step" + digits[i:i+1]
	}
	return "step" + itoa(i)
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	return string(b[n:])
}

type ctxKey struct{}

// WithTrace returns ctx carrying t, so lower layers can add steps.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the trace in ctx, or nil; Step on a nil trace is a
// no-op, so callers need not check.
func FromContext(ctx context.Context) *Trace {
	t, _ := ctx.Value(ctxKey{}).(*Trace)
	return t
}
