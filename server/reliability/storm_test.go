package reliability

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// ackLog records every write the server acknowledged, and checks as it
// goes that each writer's acknowledged resourceVersions only increase.
type ackLog struct {
	mu sync.Mutex
	// creates maps name -> resourceVersion of each acknowledged create.
	// Guarded by mu.
	creates map[string]int64
	// counters maps counter name -> last acknowledged value. Guarded by mu.
	counters map[string]int
	// last maps writer -> resourceVersion of its last acknowledged write.
	// Guarded by mu.
	last map[int]int64
	// maxRV is the highest acknowledged resourceVersion. Guarded by mu.
	maxRV int64
	// backwards describes acknowledgements whose resourceVersion was not
	// above the same writer's previous one. Guarded by mu.
	backwards []string
	acks      int
}

func newAckLog() *ackLog {
	return &ackLog{creates: map[string]int64{}, counters: map[string]int{}, last: map[int]int64{}}
}

func (l *ackLog) ack(w int, rvs string, record func()) {
	rv, err := strconv.ParseInt(rvs, 10, 64)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.backwards = append(l.backwards, fmt.Sprintf("writer %d: unparsable resourceVersion %q", w, rvs))
		return
	}
	if rv <= l.last[w] {
		l.backwards = append(l.backwards, fmt.Sprintf("writer %d: resourceVersion %d after %d", w, rv, l.last[w]))
	}
	l.last[w] = rv
	l.maxRV = max(l.maxRV, rv)
	l.acks++
	record()
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acks
}

// storm runs writers that create unique configmaps and bump one counter
// each, until ctx ends. Failed writes (the server may be dying) are
// retried with the next name after a short pause.
func storm(ctx context.Context, r *client.Resource[*object.Unstructured], ns, prefix string, writers int, log *ackLog) {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counter := fmt.Sprintf("counter-%d", w)
			for i := 0; ctx.Err() == nil; i++ {
				var err error
				if i%3 == 2 {
					err = bumpCounter(ctx, r, ns, w, counter, log)
				} else {
					name := fmt.Sprintf("%s-w%d-%06d", prefix, w, i)
					var obj *object.Unstructured
					obj, err = r.Create(ctx, configMap(ns, name, map[string]any{"i": strconv.Itoa(i)}))
					if err == nil {
						log.ack(w, obj.GetResourceVersion(), func() { log.creates[name] = mustRV(obj) })
					}
				}
				if err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		}()
	}
	wg.Wait()
}

func mustRV(o *object.Unstructured) int64 {
	rv, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	return rv
}

// bumpCounter increments counter with an optimistic-concurrency update,
// creating it first if needed.
func bumpCounter(ctx context.Context, r *client.Resource[*object.Unstructured], ns string, w int, counter string, log *ackLog) error {
	cur, err := r.Get(ctx, counter)
	if client.IsNotFound(err) {
		cur, err = r.Create(ctx, configMap(ns, counter, map[string]any{"n": "0"}))
	}
	if err != nil {
		return err
	}
	n, _ := cur.Nested("data", "n")
	v, _ := strconv.Atoi(fmt.Sprint(n))
	next := cur.DeepCopy()
	next.SetNested(strconv.Itoa(v+1), "data", "n")
	obj, err := r.Update(ctx, next)
	if err != nil {
		return err
	}
	log.ack(w, obj.GetResourceVersion(), func() { log.counters[counter] = max(log.counters[counter], v+1) })
	return nil
}

// verifyAcks checks every acknowledged write against a fresh LIST of ns
// and returns how many writes were checked and how many were lost.
func verifyAcks(t *testing.T, r *client.Resource[*object.Unstructured], log *ackLog) (checked, lost int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var l []*object.Unstructured
	for {
		list, err := r.List(ctx, wire.ListOptions{})
		if err == nil {
			l = list.Items
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("LIST after recovery: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // retrying a real request until the deadline
	}
	byName := map[string]*object.Unstructured{}
	for _, o := range l {
		byName[o.GetName()] = o
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for name, rv := range log.creates {
		checked++
		o, ok := byName[name]
		switch {
		case !ok:
			lost++
			t.Errorf("acknowledged create %s@%d is missing", name, rv)
		case mustRV(o) != rv:
			lost++
			t.Errorf("acknowledged create %s@%d is at %s", name, rv, o.GetResourceVersion())
		}
	}
	for name, v := range log.counters {
		checked++
		o, ok := byName[name]
		n, _ := o.Nested("data", "n")
		got, _ := strconv.Atoi(fmt.Sprint(n))
		if !ok || got < v {
			lost++
			t.Errorf("counter %s is %v, acknowledged %d", name, n, v)
		}
	}
	for _, b := range log.backwards {
		t.Errorf("resourceVersion went backwards: %s", b)
	}
	return checked, lost
}

// awaitAcks polls until log has at least n acknowledgements.
func awaitAcks(t *testing.T, log *ackLog, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for log.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writes acknowledged in %v", log.count(), n, within)
		}
		time.Sleep(10 * time.Millisecond) // polling a real condition with a deadline
	}
}
