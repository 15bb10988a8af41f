package faultproxy

import (
	"net"
	"sync"
)

// pair is one proxied connection: the accepted client side and the dialed
// server side.
type pair struct {
	id     uint64
	client net.Conn
	// done is closed by close; timed faults wait on it so that a dropped
	// or shut-down connection never leaves a goroutine sleeping.
	done chan struct{}

	mu sync.Mutex
	// server is nil until dialed. Guarded by mu.
	server net.Conn
	// closed is set once by close. Guarded by mu.
	closed bool
}

// setServer records the dialed side; false means the pair was closed
// meanwhile and the caller must close server itself.
func (p *pair) setServer(server net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.server = server
	return true
}

// close closes both sides and wakes every timed fault; it is idempotent and
// safe from any goroutine.
func (p *pair) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	close(p.done)
	// A zero linger makes the close an RST, as a crashed peer or a broken
	// middlebox would look, instead of an orderly FIN.
	if tc, ok := p.client.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	p.client.Close()
	if p.server != nil {
		if tc, ok := p.server.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		p.server.Close()
	}
}
