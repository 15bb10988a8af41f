package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrListen wraps a failure to open the proxy's listener.
var ErrListen = errors.New("faultproxy: listen")

// Options configure a Proxy.
type Options struct {
	// Seed makes the fault decisions reproducible (see the package doc).
	Seed uint64
	// Faults are the initial fault probabilities; the zero value forwards
	// faithfully.
	Faults Faults
	// ChunkSize is the largest chunk read (and judged) at once; default
	// 16 KiB. Smaller chunks mean more decisions per byte.
	ChunkSize int
	// OnFault, if set, is called for every fault injected, from the
	// connection's goroutine. It must not block.
	OnFault func(Event)
}

// Proxy forwards connections from Addr to a target address, injecting
// faults.
type Proxy struct {
	ln      net.Listener
	seed    uint64
	chunk   int
	onFault func(Event)

	// target is the address new connections dial; see SetTarget.
	target atomic.Pointer[string]
	// faults is read once per chunk; see SetFaults.
	faults atomic.Pointer[Faults]

	stats counters

	mu sync.Mutex
	// conns holds every open pair, so DropAll and shutdown can close them.
	// Guarded by mu.
	conns map[*pair]struct{}
	// next numbers connections in accept order. Guarded by mu.
	next uint64
}

// New opens a listener on a free loopback port that forwards to target
// (host:port). It starts nothing; Run accepts connections.
func New(target string, opts Options) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrListen, err)
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 16 << 10
	}
	if err := opts.Faults.validate(); err != nil {
		ln.Close()
		return nil, err
	}
	p := &Proxy{ln: ln, seed: opts.Seed, chunk: opts.ChunkSize, onFault: opts.OnFault, conns: map[*pair]struct{}{}}
	p.target.Store(&target)
	f := opts.Faults
	p.faults.Store(&f)
	return p, nil
}

// Addr is the proxy's listening address (127.0.0.1:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetFaults replaces the fault probabilities for every chunk forwarded from
// now on, including on connections already open.
func (p *Proxy) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return err
	}
	p.faults.Store(&f)
	return nil
}

// SetTarget changes where new connections go; open ones keep their peer.
// Combined with DropAll it moves clients from one server to another.
func (p *Proxy) SetTarget(addr string) { p.target.Store(&addr) }

// DropAll closes every open connection, as if the network failed. It
// counts one Drop per connection.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	open := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		open = append(open, c)
	}
	p.mu.Unlock()
	for _, c := range open {
		p.stats.drops.Add(1)
		c.close()
	}
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats { return p.stats.snapshot() }

// Run accepts connections until ctx ends, then closes the listener and every
// open connection, and returns after all their goroutines have exited. It
// returns nil when ctx ended, or the accept error that stopped it.
func (p *Proxy) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { p.ln.Close() })
	defer stop()
	var err error
	for {
		var c net.Conn
		c, err = p.ln.Accept()
		if err != nil {
			break
		}
		pr := p.register(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.serve(ctx, pr)
		}()
	}
	p.ln.Close()
	p.closeAll()
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("faultproxy: accept: %w", err)
}

// closeAll closes every open connection without counting faults; Run uses
// it on shutdown.
func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.close()
	}
}

func (p *Proxy) register(c net.Conn) *pair {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := &pair{id: p.next, client: c, done: make(chan struct{})}
	p.next++
	p.conns[pr] = struct{}{}
	return pr
}

func (p *Proxy) unregister(pr *pair) {
	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
}

// serve dials the target and pumps both directions until either ends.
func (p *Proxy) serve(ctx context.Context, pr *pair) {
	defer p.unregister(pr)
	defer pr.close()
	p.stats.conns.Add(1)
	d := net.Dialer{Timeout: 10 * time.Second}
	up, err := d.DialContext(ctx, "tcp", *p.target.Load())
	if err != nil {
		p.stats.dialErrors.Add(1)
		return
	}
	if !pr.setServer(up) {
		up.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		p.pump(pr, Upstream, pr.client, up)
	}()
	go func() {
		defer wg.Done()
		p.pump(pr, Downstream, up, pr.client)
	}()
	wg.Wait()
}
