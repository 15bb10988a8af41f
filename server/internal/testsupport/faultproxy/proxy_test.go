package faultproxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	mrand "math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server runs handle for every connection on a loopback listener until the
// test ends.
func server(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// start runs a proxy to target until the test ends.
func start(t *testing.T, target string, opts Options) *Proxy {
	t.Helper()
	p, err := New(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

func TestForwardsFaithfullyWithoutFaults(t *testing.T) {
	p := start(t, server(t, echo), Options{Seed: 1})
	c := dial(t, p.Addr())
	want := make([]byte, 1<<20)
	rand.Read(want)
	errc := make(chan error, 1)
	go func() { _, err := c.Write(want); errc <- err }()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("echoed bytes differ")
	}
	// The proxy counts a chunk once its write returns, which may be just
	// after the peer has read it: poll the count for the last chunk.
	s := p.Stats()
	for deadline := time.Now().Add(5 * time.Second); s.Bytes < 2<<20 && time.Now().Before(deadline); s = p.Stats() {
		time.Sleep(time.Millisecond)
	}
	if s.Faults() != 0 || s.Bytes != 2<<20 || s.Conns != 1 {
		t.Fatalf("stats %+v, want no faults, 2 MiB forwarded, 1 conn", s)
	}
}

func TestDelayKeepsBytesIntact(t *testing.T) {
	p := start(t, server(t, echo), Options{Seed: 2, ChunkSize: 512,
		Faults: Faults{Delay: 1, DelayMax: time.Millisecond}})
	c := dial(t, p.Addr())
	want := make([]byte, 64<<10)
	rand.Read(want)
	go func() { _, _ = c.Write(want) }()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("delayed bytes differ")
	}
	if p.Stats().Delays == 0 {
		t.Fatal("no delay counted")
	}
}

func TestDropClosesBothSides(t *testing.T) {
	serverSaw := make(chan error, 1)
	target := server(t, func(c net.Conn) {
		_, err := io.Copy(io.Discard, c)
		serverSaw <- err
	})
	p := start(t, target, Options{Seed: 3, Faults: Faults{Drop: 1}})
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes from a dropped connection", n)
	}
	select {
	case <-serverSaw:
	case <-time.After(10 * time.Second):
		t.Fatal("server side still open after a drop")
	}
	if s := p.Stats(); s.Drops != 1 {
		t.Fatalf("drops = %d, want 1", s.Drops)
	}
}

func TestTruncateForwardsAStrictPrefix(t *testing.T) {
	received := make(chan []byte, 1)
	target := server(t, func(c net.Conn) {
		b, _ := io.ReadAll(c)
		received <- b
	})
	p := start(t, target, Options{Seed: 4, Faults: Faults{Truncate: 1, Direction: Upstream}})
	c := dial(t, p.Addr())
	msg := bytes.Repeat([]byte("0123456789"), 100)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	var got []byte
	select {
	case got = <-received:
	case <-time.After(10 * time.Second):
		t.Fatal("server never saw the connection end")
	}
	if len(got) >= len(msg) || !bytes.HasPrefix(msg, got) {
		t.Fatalf("server got %d bytes, want a strict prefix of the %d sent", len(got), len(msg))
	}
	if s := p.Stats(); s.Truncates != 1 {
		t.Fatalf("truncates = %d, want 1", s.Truncates)
	}
}

func TestStallHoldsTheChunk(t *testing.T) {
	var mu sync.Mutex
	var waited time.Duration
	p := start(t, server(t, echo), Options{Seed: 5,
		Faults:  Faults{Stall: 1, StallMax: 300 * time.Millisecond, Direction: Downstream},
		OnFault: func(e Event) { mu.Lock(); waited += e.Wait; mu.Unlock() },
	})
	c := dial(t, p.Addr())
	begin := time.Now()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(begin)
	mu.Lock()
	defer mu.Unlock()
	if waited <= 0 || elapsed < waited {
		t.Fatalf("echo took %v, stall was %v", elapsed, waited)
	}
}

// pingPong sends n single bytes through a proxy, waiting for each echo, so
// that every chunk is exactly one byte and the decisions are replayable. It
// returns the faults injected.
func pingPong(t *testing.T, seed uint64, n int) []Event {
	var mu sync.Mutex
	var events []Event
	p := start(t, server(t, echo), Options{Seed: seed,
		Faults:  Faults{Stall: 0.3, StallMax: time.Millisecond, Delay: 0.3, DelayMax: time.Millisecond},
		OnFault: func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
	})
	c := dial(t, p.Addr())
	for i := range n {
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != byte(i) {
			t.Fatalf("echo %d: %v %v", i, b, err)
		}
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	for i := range events {
		events[i].Wait = 0 // compare decisions, not durations' rounding
	}
	return append([]Event(nil), events...)
}

func TestSameSeedSameFaults(t *testing.T) {
	a, b, other := pingPong(t, 7, 60), pingPong(t, 7, 60), pingPong(t, 8, 60)
	if len(a) == 0 {
		t.Fatal("no faults injected")
	}
	if !equalEvents(a, b) {
		t.Fatalf("same seed, different faults:\n%v\n%v", a, b)
	}
	if equalEvents(a, other) {
		t.Fatal("different seeds made identical faults")
	}
}

func equalEvents(a, b []Event) bool {
	if len(a) != len(b) {
		return false
	}
	// Both directions run concurrently, so order events per direction.
	key := func(es []Event) map[[3]uint64]Event {
		m := map[[3]uint64]Event{}
		for _, e := range es {
			m[[3]uint64{e.Conn, uint64(e.Direction), e.Chunk}] = e
		}
		return m
	}
	ma, mb := key(a), key(b)
	for k, e := range ma {
		if mb[k] != e {
			return false
		}
	}
	return len(ma) == len(mb)
}

func TestDecideIsDeterministicAndRespectsProbabilities(t *testing.T) {
	f := Faults{Drop: 0.1, Truncate: 0.1, Stall: 0.1, StallMax: time.Second, Delay: 0.1, DelayMax: time.Millisecond}
	r1 := newRand(9)
	r2 := newRand(9)
	counts := map[Kind]int{}
	const n = 20000
	for i := range n {
		size := 1 + i%100
		d1, d2 := decide(r1, f, size), decide(r2, f, size)
		if d1.kind != d2.kind || d1.keep != d2.keep || len(d1.waits) != len(d2.waits) {
			t.Fatalf("draw %d differs: %+v vs %+v", i, d1, d2)
		}
		if d1.kind == KindTruncate && d1.keep >= size {
			t.Fatalf("truncate keeps %d of %d", d1.keep, size)
		}
		if d1.kind == KindDelay && len(d1.waits) > size {
			t.Fatalf("delay splits %d bytes into %d pieces", size, len(d1.waits))
		}
		counts[d1.kind]++
	}
	for _, k := range []Kind{"", KindDrop, KindTruncate, KindStall, KindDelay} {
		want := 0.1
		if k == "" {
			want = 0.6
		}
		if got := float64(counts[k]) / n; got < want-0.02 || got > want+0.02 {
			t.Errorf("kind %q: frequency %.3f, want %.2f", k, got, want)
		}
	}
}

func TestDropAllAndSetTargetMoveClients(t *testing.T) {
	named := func(name string) func(net.Conn) {
		return func(c net.Conn) { _, _ = c.Write([]byte(name)); _, _ = io.Copy(io.Discard, c) }
	}
	a, b := server(t, named("A")), server(t, named("B"))
	p := start(t, a, Options{Seed: 10})
	first := dial(t, p.Addr())
	readName := func(c net.Conn) string {
		var buf [1]byte
		if _, err := io.ReadFull(c, buf[:]); err != nil {
			t.Fatal(err)
		}
		return string(buf[:])
	}
	if got := readName(first); got != "A" {
		t.Fatalf("first connection reached %q", got)
	}
	p.SetTarget(b)
	p.DropAll()
	if _, err := first.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection survived DropAll")
	}
	if got := readName(dial(t, p.Addr())); got != "B" {
		t.Fatalf("new connection reached %q after SetTarget", got)
	}
	if s := p.Stats(); s.Drops != 1 {
		t.Fatalf("drops = %d, want 1", s.Drops)
	}
}

func TestRunReturnsWithStalledConnectionsOpen(t *testing.T) {
	p, err := New(server(t, echo), Options{Seed: 11, Faults: Faults{Stall: 1, StallMax: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("stuck")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().Stalls == 0 {
		if time.Now().After(deadline) {
			t.Fatal("chunk never stalled")
		}
		time.Sleep(time.Millisecond) // polling a real condition
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return with a stalled connection open")
	}
	// goleak in TestMain checks that no pump is left sleeping.
}

func TestInvalidFaults(t *testing.T) {
	for _, f := range []Faults{
		{Drop: -0.1}, {Drop: 1.5}, {Drop: 0.6, Stall: 0.6, StallMax: time.Second},
		{Stall: 0.1}, {Delay: 0.1}, {StallMax: -1},
	} {
		if _, err := New("127.0.0.1:1", Options{Faults: f}); !errors.Is(err, ErrFaults) {
			t.Errorf("New(%+v) = %v, want ErrFaults", f, err)
		}
	}
	p, err := New("127.0.0.1:1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.ln.Close()
	if err := p.SetFaults(Faults{Truncate: 2}); !errors.Is(err, ErrFaults) {
		t.Fatalf("SetFaults = %v, want ErrFaults", err)
	}
}

func newRand(seed uint64) *mrand.Rand { return mrand.New(mrand.NewPCG(seed, 0)) }
