package garbagecollector_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/internal/testsupport/faultproxy"
)

// TestGarbageCollectorConvergesThroughFaults runs the collector through a
// fault-injecting proxy. Its connection to the server is cut and kept down
// while owners are deleted (background, orphan, foreground) and a dependent
// of an already deleted owner is created; then the connection comes back
// with random drops and truncations, then clean. The collector must have
// seen the deletions through its informers' resumed watches or relists and
// converge to what it would have done without faults.
func TestGarbageCollectorConvergesThroughFaults(t *testing.T) {
	e := newEnv(t, true)
	const ns = "faults"
	e.namespace(t, ns)
	bg := e.cm(t, ns, "bg-owner")
	orphan := e.cm(t, ns, "orphan-owner")
	fg := e.cm(t, ns, "fg-owner")
	var bgDeps, orphanDeps, fgDeps []string
	n := 8
	if os.Getenv("LISTWATCH_LONG") == "1" {
		// Lists and replays are many chunks long: more of them are cut,
		// and the informers' backoff grows towards its 30s cap.
		n, e.patience = 300, 3*time.Minute
	}
	for i := range n {
		bgDeps = append(bgDeps, e.cm(t, ns, fmt.Sprintf("bg-%d", i), ref(bg, i%2 == 0)).GetName())
		orphanDeps = append(orphanDeps, e.cm(t, ns, fmt.Sprintf("orphan-%d", i), ref(orphan, true)).GetName())
		fgDeps = append(fgDeps, e.cm(t, ns, fmt.Sprintf("fg-%d", i), ref(fg, true)).GetName())
	}
	// Wait until the collector's caches hold the last object: the graph
	// knows every dependent before the cut (it would otherwise find them
	// on its relist, which the test exercises as well).
	e.waitFor(t, "collector synced", e.gc.IsSynced)

	// Down: every connection cut, and every new one dies at its first bytes.
	if err := e.proxy.SetFaults(faultproxy.Faults{Drop: 1}); err != nil {
		t.Fatal(err)
	}
	e.proxy.DropAll()
	e.del(t, cmGVR, ns, "bg-owner", "Background")
	e.del(t, cmGVR, ns, "orphan-owner", "Orphan")
	e.del(t, cmGVR, ns, "fg-owner", "Foreground")
	late := e.cm(t, ns, "late", ref(bg, false)) // its owner is already gone
	drops := e.proxy.Stats().Drops
	e.waitFor(t, "the collector tried to reconnect", func() bool { return e.proxy.Stats().Drops >= drops+2 })

	// Flaky: connections come back, but some are cut or truncated.
	if err := e.proxy.SetFaults(faultproxy.Faults{Drop: 0.02, Truncate: 0.02}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "progress through the flaky network", func() bool {
		return !e.exists(t, cmGVR, ns, late.GetName()) || !e.exists(t, cmGVR, ns, bgDeps[0])
	})

	// Clean: everything must converge.
	if err := e.proxy.SetFaults(faultproxy.Faults{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, cmGVR, ns, append(bgDeps, "late")...)
	e.waitGone(t, cmGVR, ns, fgDeps...)
	e.waitGone(t, cmGVR, ns, "fg-owner", "orphan-owner")
	for _, d := range orphanDeps {
		if got := e.ownerUIDs(t, cmGVR, ns, d); len(got) != 0 {
			t.Errorf("%s owners = %v, want none", d, got)
		}
	}
	if s := e.proxy.Stats(); s.Faults() == 0 {
		t.Fatalf("no fault injected: %+v", s)
	}
}
