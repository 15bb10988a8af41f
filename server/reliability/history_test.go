package reliability

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

// history is an informer handler that checks, call by call, that the
// per-key sequence it is told is consistent, and keeps the state those
// calls imply so that it can be compared with the server at the end.
type history struct {
	mu sync.Mutex
	// state maps key -> resourceVersion of what the handler last saw;
	// a key is present iff the handler's last word on it was an add or
	// an update. Guarded by mu.
	state map[string]string
	// violations describe every inconsistency seen. Guarded by mu.
	violations []string
	// events counts handler calls. Guarded by mu.
	events int
}

func newHistory() *history { return &history{state: map[string]string{}} }

func (h *history) handler() informer.HandlerFuncs[*object.Unstructured] {
	return informer.HandlerFuncs[*object.Unstructured]{
		AddFunc:    h.onAdd,
		UpdateFunc: h.onUpdate,
		DeleteFunc: h.onDelete,
	}
}

func key(o *object.Unstructured) string { return o.GetNamespace() + "/" + o.GetName() }

func (h *history) violate(format string, args ...any) {
	if len(h.violations) < 20 {
		h.violations = append(h.violations, fmt.Sprintf(format, args...))
	}
}

func (h *history) onAdd(o *object.Unstructured, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events++
	k := key(o)
	if rv, ok := h.state[k]; ok {
		h.violate("add of %s at %s while present at %s", k, o.GetResourceVersion(), rv)
	}
	h.state[k] = o.GetResourceVersion()
}

func (h *history) onUpdate(old, cur *object.Unstructured) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events++
	k := key(cur)
	rv, ok := h.state[k]
	switch {
	case !ok:
		h.violate("update of %s at %s before any add", k, cur.GetResourceVersion())
	case rv != old.GetResourceVersion():
		h.violate("update of %s: old is %s, last seen %s", k, old.GetResourceVersion(), rv)
	case rvLess(cur.GetResourceVersion(), rv):
		h.violate("update of %s goes back from %s to %s", k, rv, cur.GetResourceVersion())
	}
	h.state[k] = cur.GetResourceVersion()
}

func (h *history) onDelete(o *object.Unstructured, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events++
	k := key(o)
	if _, ok := h.state[k]; !ok {
		h.violate("delete of %s at %s while absent", k, o.GetResourceVersion())
	}
	delete(h.state, k)
}

// snapshot returns a copy of the state, the violations and the call count.
func (h *history) snapshot() (map[string]string, []string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := make(map[string]string, len(h.state))
	for k, v := range h.state {
		s[k] = v
	}
	return s, append([]string(nil), h.violations...), h.events
}

func rvLess(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

// diff describes how got differs from want (key -> resourceVersion), or ""
// when they are equal.
func diff(want, got map[string]string) string {
	var missing, extra, stale int
	var example string
	for k, rv := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing++
			if example == "" {
				example = fmt.Sprintf("missing %s@%s", k, rv)
			}
		case g != rv:
			stale++
			if example == "" {
				example = fmt.Sprintf("%s at %s, want %s", k, g, rv)
			}
		}
	}
	for k, rv := range got {
		if _, ok := want[k]; !ok {
			extra++
			if example == "" {
				example = fmt.Sprintf("extra %s@%s", k, rv)
			}
		}
	}
	if missing+extra+stale == 0 {
		return ""
	}
	return fmt.Sprintf("%d missing, %d extra, %d stale (e.g. %s)", missing, extra, stale, example)
}
