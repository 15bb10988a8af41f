package faultproxy

import "sync/atomic"

// Stats count what a Proxy has done since New.
type Stats struct {
	Conns      uint64 // connections accepted
	DialErrors uint64 // connections whose target could not be dialed
	Drops      uint64 // connections closed by Drop or DropAll
	Truncates  uint64
	Stalls     uint64
	Delays     uint64
	Bytes      uint64 // bytes forwarded, both directions
}

// Faults is the total number of faults injected.
func (s Stats) Faults() uint64 { return s.Drops + s.Truncates + s.Stalls + s.Delays }

type counters struct {
	conns, dialErrors, drops, truncates, stalls, delays, bytes atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Conns: c.conns.Load(), DialErrors: c.dialErrors.Load(), Drops: c.drops.Load(),
		Truncates: c.truncates.Load(), Stalls: c.stalls.Load(), Delays: c.delays.Load(),
		Bytes: c.bytes.Load(),
	}
}

func (c *counters) count(k Kind) {
	switch k {
	case KindDrop:
		c.drops.Add(1)
	case KindTruncate:
		c.truncates.Add(1)
	case KindStall:
		c.stalls.Add(1)
	case KindDelay:
		c.delays.Add(1)
	}
}
