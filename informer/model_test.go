package informer_test

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"testing"
)

var modelSeeds = flag.Int("model.seeds", 40, "seeds for TestRandomizedModel")

// TestRandomizedModel drives a fake server with random writes and random
// faults, then checks that the store and every handler converge to the
// server's state with a consistent history. A failure names its seed;
// rerun one with -run 'TestRandomizedModel/seed=N'.
func TestRandomizedModel(t *testing.T) {
	for s := range *modelSeeds {
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			if err := runModel(t, uint64(s)); err != nil {
				t.Fatalf("seed %d: %v", s, err)
			}
		})
	}
}

func runModel(t *testing.T, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	srv := newFakeServer()
	for i := range rng.IntN(20) {
		srv.upsert("ns", fmt.Sprintf("o%d", i), nil)
	}
	streaming := rng.IntN(2) == 0
	if streaming && rng.IntN(4) == 0 {
		srv.streaming = []string{"refuse", "ignore"}[rng.IntN(2)]
	}
	h := startHarness(t, srv, fastOpts(streaming, int64(1+rng.IntN(7))))
	name := func() string { return fmt.Sprintf("o%d", rng.IntN(25)) }
	for range 200 {
		switch p := rng.IntN(100); {
		case p < 45:
			srv.upsert("ns", name(), map[string]string{"v": fmt.Sprint(rng.IntN(3))})
		case p < 65:
			srv.remove("ns", name())
		case p < 70:
			srv.endWatches(io.EOF)
		case p < 73:
			srv.endWatches(gone())
		case p < 76:
			srv.endWatches(syscall.ECONNRESET)
		case p < 79:
			srv.compact()
		case p < 81:
			srv.mu.Lock()
			srv.listErrs = append(srv.listErrs, gone(), syscall.ECONNREFUSED)
			srv.mu.Unlock()
		case p < 83:
			srv.mu.Lock()
			srv.watchErrs = append(srv.watchErrs, gone())
			srv.expireNextContinue++
			srv.mu.Unlock()
		case p < 86:
			srv.mu.Lock()
			srv.replayOnWatch = 1 + rng.IntN(4)
			srv.mu.Unlock()
		case p < 90:
			srv.bookmark("")
		case p < 92:
			srv.bookmark(fmt.Sprint(rng.IntN(10))) // stale bookmark
		case p < 94:
			srv.setDown(true)
			srv.endWatches(syscall.ECONNRESET)
		case p < 97:
			srv.setDown(false)
		default:
			srv.restart()
		}
	}
	srv.setDown(false)
	return h.converged()
}
