package demo

import (
	"context"
	"sync"
)

// observer records what the informer delivered and what the controller
// did, so each scripted step can wait for its outcome instead of sleeping.
type observer struct {
	mu sync.Mutex
	// events and actions only grow; changed is closed and replaced on
	// every append (guarded by mu), waking every waiter to re-check.
	events  []string // "Add default/x"
	actions []string // "default/x: created mirror"
	changed chan struct{}
}

func newObserver() *observer {
	return &observer{changed: make(chan struct{})}
}

func (o *observer) event(typ, key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, typ+" "+key)
	o.wakeLocked()
}

func (o *observer) action(key, what string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.actions = append(o.actions, key+": "+what)
	o.wakeLocked()
}

func (o *observer) wakeLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// mark is a point in the record; waitFor looks only after it.
type mark struct{ events, actions int }

func (o *observer) mark() mark {
	o.mu.Lock()
	defer o.mu.Unlock()
	return mark{len(o.events), len(o.actions)}
}

// waitFor blocks until, after m, the events include wantEvents in order and
// the actions include wantActions in order (other entries may interleave),
// or ctx ends.
func (o *observer) waitFor(ctx context.Context, m mark, wantEvents, wantActions []string) error {
	for {
		o.mu.Lock()
		ok := subsequence(o.events[m.events:], wantEvents) && subsequence(o.actions[m.actions:], wantActions)
		changed := o.changed
		o.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// subsequence reports whether want appears in have in order.
func subsequence(have, want []string) bool {
	i := 0
	for _, h := range have {
		if i < len(want) && h == want[i] {
			i++
		}
	}
	return i == len(want)
}
