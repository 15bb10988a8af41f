package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress reports how far a long phase (creating objects, writing a
// burst) has got. On a terminal it redraws one bar in place, at most ten
// times a second; elsewhere (CI logs, files, pipes) it prints a plain line
// every 10% so logs stay short. A nil *Progress reports nothing.
//
// It starts no goroutine: it draws from Add, on the caller's goroutine.
type Progress struct {
	w     io.Writer
	tty   bool
	label string
	total int
	start time.Time

	mu       sync.Mutex // guards the fields below
	done     int
	lastDraw time.Time
	lastStep int // last 10% step printed (non-tty)
}

// NewProgress returns a Progress writing to w (nil: nothing). It treats w
// as a terminal when it is an *os.File on a terminal.
func NewProgress(w io.Writer, label string, total int) *Progress {
	if w == nil {
		return nil
	}
	p := &Progress{w: w, label: label, total: total, start: time.Now(), lastStep: -1}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

// Add records n more units done.
func (p *Progress) Add(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.tty {
		if now := time.Now(); now.Sub(p.lastDraw) >= 100*time.Millisecond || p.done >= p.total {
			p.lastDraw = now
			p.drawLocked()
		}
		return
	}
	if p.total <= 0 {
		return
	}
	if step := p.done * 10 / p.total; step > p.lastStep {
		p.lastStep = step
		fmt.Fprintf(p.w, "%s: %d/%d (%d%%) %s\n", p.label, p.done, p.total, step*10, time.Since(p.start).Round(time.Millisecond))
	}
}

// drawLocked redraws the bar; p.mu is held.
func (p *Progress) drawLocked() {
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(p.done)/float64(p.total), 1)
	}
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r%-24s [%s%s] %d/%d %s ", p.label, strings.Repeat("=", n), strings.Repeat(" ", width-n),
		p.done, p.total, time.Since(p.start).Round(100*time.Millisecond))
}

// Finish ends the bar's line on a terminal.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		p.drawLocked()
		fmt.Fprintln(p.w)
	}
}
