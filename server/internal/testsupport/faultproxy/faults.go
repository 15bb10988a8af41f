package faultproxy

import (
	"errors"
	"fmt"
	"time"
)

// ErrFaults wraps every invalid Faults value.
var ErrFaults = errors.New("faultproxy: invalid faults")

// Faults are per-chunk probabilities (each in [0, 1]) and the time bounds of
// the timed faults. At most one fault applies to a chunk; see the package
// doc for the precedence.
type Faults struct {
	// Drop closes the connection, losing the chunk.
	Drop float64
	// Truncate forwards a prefix of the chunk, then closes the connection.
	Truncate float64
	// Stall holds the chunk for a random time up to StallMax.
	Stall    float64
	StallMax time.Duration
	// Delay dribbles the chunk in pieces, each held up to DelayMax.
	Delay    float64
	DelayMax time.Duration
	// Direction limits faults to one direction; the zero value faults both.
	Direction Direction
}

func (f Faults) validate() error {
	for _, p := range []float64{f.Drop, f.Truncate, f.Stall, f.Delay} {
		if p < 0 || p > 1 || p != p {
			return fmt.Errorf("%w: probability %v outside [0, 1]", ErrFaults, p)
		}
	}
	if f.Drop+f.Truncate+f.Stall+f.Delay > 1 {
		return fmt.Errorf("%w: probabilities sum to more than 1", ErrFaults)
	}
	if f.StallMax < 0 || f.DelayMax < 0 {
		return fmt.Errorf("%w: negative duration", ErrFaults)
	}
	if f.Stall > 0 && f.StallMax == 0 || f.Delay > 0 && f.DelayMax == 0 {
		return fmt.Errorf("%w: a timed fault needs its maximum duration", ErrFaults)
	}
	return nil
}

// Direction is the way bytes flow through the proxy.
type Direction int

const (
	// Both is the zero Direction: faults apply to both ways.
	Both Direction = iota
	// Upstream is client to target.
	Upstream
	// Downstream is target to client.
	Downstream
)

func (d Direction) String() string {
	switch d {
	case Upstream:
		return "upstream"
	case Downstream:
		return "downstream"
	}
	return "both"
}

// Kind names a fault.
type Kind string

const (
	KindDrop     Kind = "drop"
	KindTruncate Kind = "truncate"
	KindStall    Kind = "stall"
	KindDelay    Kind = "delay"
)

// Event describes one injected fault, for OnFault.
type Event struct {
	Conn      uint64 // connection number, in accept order from 0
	Direction Direction
	Chunk     uint64 // chunk number on this connection and direction, from 0
	Kind      Kind
	// Kept is how many bytes of the chunk were forwarded (Truncate);
	// Wait is how long the chunk was held in total (Stall, Delay).
	Kept int
	Wait time.Duration
}

// decision is what to do with one chunk.
type decision struct {
	kind  Kind // "" forwards at once
	keep  int
	waits []time.Duration // Stall: one wait; Delay: one per piece
}
