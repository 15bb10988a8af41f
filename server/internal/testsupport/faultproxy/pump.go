package faultproxy

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"time"
)

// pump copies src to dst one chunk at a time, applying a decision to each.
// It returns when src ends, a write fails, or a fault closes the pair.
func (p *Proxy) pump(pr *pair, dir Direction, src, dst net.Conn) {
	rng := rand.New(rand.NewPCG(p.seed, pr.id<<1|uint64(dir-1)))
	buf := make([]byte, p.chunk)
	for chunk := uint64(0); ; chunk++ {
		n, err := src.Read(buf)
		if n > 0 {
			f := *p.faults.Load()
			d := decide(rng, f, n)
			if f.Direction != Both && f.Direction != dir {
				d = decision{}
			}
			if !p.apply(pr, dir, chunk, d, buf[:n], dst) {
				pr.close()
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// Pass the orderly half-close on; the other direction
				// may still have bytes to deliver.
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
					return
				}
			}
			pr.close()
			return
		}
	}
}

// apply carries out d on one chunk and reports whether the pair stays open.
func (p *Proxy) apply(pr *pair, dir Direction, chunk uint64, d decision, b []byte, dst net.Conn) bool {
	if d.kind != "" {
		p.stats.count(d.kind)
		if p.onFault != nil {
			var total time.Duration
			for _, w := range d.waits {
				total += w
			}
			p.onFault(Event{Conn: pr.id, Direction: dir, Chunk: chunk, Kind: d.kind, Kept: d.keep, Wait: total})
		}
	}
	switch d.kind {
	case KindDrop:
		return false
	case KindTruncate:
		p.write(dst, b[:d.keep])
		return false
	case KindStall:
		return pr.wait(d.waits[0]) && p.write(dst, b)
	case KindDelay:
		pieces := split(b, len(d.waits))
		for i, piece := range pieces {
			if !pr.wait(d.waits[i]) || !p.write(dst, piece) {
				return false
			}
		}
		return true
	}
	return p.write(dst, b)
}

func (p *Proxy) write(dst net.Conn, b []byte) bool {
	n, err := dst.Write(b)
	p.stats.bytes.Add(uint64(n))
	return err == nil
}

// wait holds for d, or until the pair closes (false).
func (pr *pair) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-pr.done:
		return false
	}
}

// maxPieces bounds how finely Delay dribbles one chunk.
const maxPieces = 8

// decide draws the fate of one n-byte chunk. It consumes the same number of
// draws whatever the outcome, so that a change in the probabilities does
// not shift the decisions of later chunks.
func decide(rng *rand.Rand, f Faults, n int) decision {
	r := rng.Float64()
	keepDraw := rng.IntN(n)
	waitDraw := rng.Float64()
	pieceDraw := 1 + rng.IntN(maxPieces)
	pieceWaits := make([]float64, maxPieces)
	for i := range pieceWaits {
		pieceWaits[i] = rng.Float64()
	}
	switch {
	case r < f.Drop:
		return decision{kind: KindDrop}
	case r < f.Drop+f.Truncate:
		return decision{kind: KindTruncate, keep: keepDraw}
	case r < f.Drop+f.Truncate+f.Stall:
		return decision{kind: KindStall, waits: []time.Duration{scale(f.StallMax, waitDraw)}}
	case r < f.Drop+f.Truncate+f.Stall+f.Delay:
		pieces := min(pieceDraw, n)
		waits := make([]time.Duration, pieces)
		for i := range waits {
			waits[i] = scale(f.DelayMax, pieceWaits[i])
		}
		return decision{kind: KindDelay, waits: waits}
	}
	return decision{}
}

func scale(max time.Duration, frac float64) time.Duration {
	return time.Duration(float64(max) * frac)
}

// split cuts b into k nearly equal non-empty pieces (k <= len(b)).
func split(b []byte, k int) [][]byte {
	out := make([][]byte, 0, k)
	for i := 0; i < k; i++ {
		lo, hi := len(b)*i/k, len(b)*(i+1)/k
		out = append(out, b[lo:hi])
	}
	return out
}
