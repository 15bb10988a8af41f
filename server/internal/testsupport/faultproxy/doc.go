// Package faultproxy is a TCP proxy on 127.0.0.1 that injects faults into
// the byte streams it forwards: dropped connections, stalls, truncated
// streams and delayed (dribbled) bytes. It sits between a client and a
// server without understanding their protocol, so TLS passes through
// untouched and every fault is seen by both ends as a TCP-level failure.
//
// # Basics
//
//	p, _ := faultproxy.New("127.0.0.1:6443", faultproxy.Options{
//		Seed:   42,
//		Faults: faultproxy.Faults{Drop: 0.01, Stall: 0.01, StallMax: time.Second},
//	})
//	go p.Run(ctx)        // blocks until ctx ends, then closes every connection
//	dial(p.Addr())       // instead of the server's address
//	p.SetFaults(faultproxy.Faults{}) // quiesce: forward faithfully from now on
//
// New opens the listener (so Addr is known at once) but starts nothing; Run
// accepts connections and returns only after every goroutine it started has
// exited.
//
// # Reproducibility
//
// Every decision is drawn from a random source seeded with (Seed, connection
// number, direction), one draw per forwarded chunk. The same seed therefore
// makes the same decisions for the same sequence of chunks on the n-th
// connection. Chunk boundaries depend on how the kernel delivers bytes, so a
// run over real sockets is reproducible in distribution, not byte for byte;
// tests that need exact replay drive one connection with fixed writes.
//
// # Faults
//
// For each chunk read from one side, in order of precedence:
//
//   - Drop: close both sides at once (the chunk is lost).
//   - Truncate: forward a random prefix of the chunk, then close both sides.
//   - Stall: wait a random time up to StallMax, then forward the chunk.
//   - Delay: forward the chunk in small pieces, waiting up to DelayMax
//     before each.
//
// SetFaults changes the probabilities of connections already open, and
// DropAll closes every open connection, which together let a test inject a
// burst of faults and then let the system settle.
package faultproxy
