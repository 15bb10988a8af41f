package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.uber.org/zap"

	"github.com/listwatch/listwatch/server/storage"
)

// memberTLS is the TLS configuration of the member's own client: its CA
// and client certificate.
func memberTLS(t *testing.T, e *Embedded) *tls.Config {
	t.Helper()
	cfg := e.ClientConfig()
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := cfg.tlsConfig()
	if err != nil {
		t.Fatal(err)
	}
	tc.Certificates = []tls.Certificate{cert}
	return tc
}

// httpGet GETs url with tc and returns the status code.
func httpGet(url string, tc *tls.Config) (int, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestEmbeddedPeerRefusesOthers: the peer listener, which answers
// membership and lease requests, speaks TLS and wants a certificate of the
// member's CA.
func TestEmbeddedPeerRefusesOthers(t *testing.T) {
	t.Parallel()
	e, _ := startForTest(t)
	if len(e.etcd.Peers) != 1 {
		t.Fatalf("%d peer listeners", len(e.etcd.Peers))
	}
	addr := e.etcd.Peers[0].Addr().String()
	get := httpGet
	if code, err := get("http://"+addr+"/members", nil); err == nil && code == http.StatusOK {
		t.Error("plaintext GET /members on the peer port: 200")
	}
	if code, err := get("https://"+addr+"/members", &tls.Config{InsecureSkipVerify: true}); err == nil {
		t.Errorf("TLS GET /members without a certificate: %d", code)
	}
	// With the member's own certificate the same request works, so the
	// refusals above are the authentication's.
	tc := memberTLS(t, e)
	if code, err := get("https://"+addr+"/members", tc); err != nil || code != http.StatusOK {
		t.Errorf("GET /members with the member's client certificate: %d, %v", code, err)
	}
}

// TestEmbeddedClientListenerIsGRPCOnly: the client endpoints serve gRPC
// alone (etcd then serves it with grpc-go's own transport, not through
// ServeHTTP); etcd's HTTP endpoints have a listener of their own, under
// the same mutual TLS.
func TestEmbeddedClientListenerIsGRPCOnly(t *testing.T) {
	t.Parallel()
	e, _ := startForTest(t)
	cfg, tc, get := e.ClientConfig(), memberTLS(t, e), httpGet
	if len(cfg.Endpoints) != 1 || len(e.etcd.Clients) != 2 {
		t.Fatalf("endpoints %v, %d client listeners; want 1 endpoint of 2 listeners", cfg.Endpoints, len(e.etcd.Clients))
	}
	if code, err := get(cfg.Endpoints[0]+"/health", tc); err == nil && code == http.StatusOK {
		t.Errorf("GET /health on the gRPC endpoint %s: 200", cfg.Endpoints[0])
	}
	var httpAddr string
	for _, l := range e.etcd.Clients {
		if "https://"+l.Addr().String() != cfg.Endpoints[0] {
			httpAddr = l.Addr().String()
		}
	}
	if code, err := get("https://"+httpAddr+"/health", tc); err != nil || code != http.StatusOK {
		t.Errorf("GET /health on the HTTP listener %s: %d, %v", httpAddr, code, err)
	}
	if code, err := get("https://"+httpAddr+"/health", &tls.Config{InsecureSkipVerify: true}); err == nil {
		t.Errorf("GET /health on the HTTP listener without a certificate: %d", code)
	}
}

// TestEmbeddedClientIsInProcess: the server's client of its member does
// not go through the member's listeners: it reads and writes with every
// listener closed.
func TestEmbeddedClientIsInProcess(t *testing.T) {
	t.Parallel()
	e, _ := startForTest(t)
	for _, l := range e.etcd.Clients {
		_ = l.Close()
	}
	// A client over the network would wait for a connection until then.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.Client().Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put with the listeners closed: %v", err)
	}
	got, err := e.Client().Get(ctx, "k")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v" {
		t.Fatalf("get with the listeners closed: %v, %v", got, err)
	}
}

// TestStartEmbeddedReturnsWhileEtcdBlocks: when etcd cannot open its
// database (another program holds bbolt's lock), StartEmbedded still
// returns when its context ends, and the directory is free once the
// abandoned start has been cleaned up.
func TestStartEmbeddedReturnsWhileEtcdBlocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func(ctx context.Context) error {
		e, err := StartEmbedded(ctx, EmbeddedConfig{Dir: dir})
		if err == nil {
			return e.Close()
		}
		return err
	}
	if err := start(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := os.Open(filepath.Join(dir, "member", "snap", "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := syscall.Flock(int(db.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrEmbeddedStart) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("start on a locked database: %v, want ErrEmbeddedStart and the context's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("StartEmbedded still blocked 10s after its context ended")
	}
	// The abandoned start holds the directory until etcd gets its
	// database and has been stopped again.
	if err := start(context.Background()); !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("start during the abandoned start: %v, want ErrDataDirInUse", err)
	}
	if err := syscall.Flock(int(db.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	abandonedStarts.Wait()
	if err := start(context.Background()); err != nil {
		t.Fatalf("start after the abandoned one: %v", err)
	}
}

// TestEmbeddedUpgradeFromPlaintext: a directory that an earlier version
// ran with plaintext client and peer URLs starts with TLS and keeps its
// data.
func TestEmbeddedUpgradeFromPlaintext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ec := embed.NewConfig()
	ec.Dir, ec.Name = dir, "listwatch"
	cu, _ := url.Parse("http://127.0.0.1:0")
	pu, _ := url.Parse("http://127.0.0.1:0")
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	old, err := embed.StartEtcd(ec)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.Server.ReadyNotify():
	case err := <-old.Err():
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := NewClient(Config{Endpoints: []string{"http://" + old.Clients[0].Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	closeEtcd(old)

	e, err := StartEmbedded(ctx, EmbeddedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if r, err := e.Client().Get(ctx, "k"); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Fatalf("after the upgrade: %v, %v", r, err)
	}
}

// FuzzHolderOf: whatever another process (or a user) left in the lock
// file, the description is one of the three forms and names only a
// positive decimal PID.
func FuzzHolderOf(f *testing.F) {
	f.Add([]byte("1234\n"), 1)
	f.Add([]byte("1234"), 1234)
	f.Add([]byte(""), 1)
	f.Add([]byte("-5\n"), 1)
	f.Add([]byte("+7"), 1)
	f.Add([]byte("99999999999999999999999"), 1)
	f.Fuzz(func(t *testing.T, b []byte, self int) {
		got := holderOf(b, self)
		var pid int
		switch {
		case got == "another process":
			return
		case strings.HasPrefix(got, "this process (pid "):
			if _, err := fmt.Sscanf(got, "this process (pid %d)", &pid); err != nil || pid != self {
				t.Fatalf("%q for self %d", got, self)
			}
		default:
			if _, err := fmt.Sscanf(got, "process %d", &pid); err != nil || pid == self {
				t.Fatalf("%q for self %d", got, self)
			}
		}
		if pid <= 0 || got != strings.ToValidUTF8(got, "") {
			t.Fatalf("%q", got)
		}
	})
}

// TestEmbeddedElectsItselfQuickly: the single member serves once it has
// elected itself, after one to ElectionMs/TickMs+1 ticks (etcd
// fast-forwards the rest of its first election timeout); with etcd's
// defaults (100 ms ticks, 1 s timeout) that was up to a second of every
// start. The member's raft runs with the short ticks.
func TestEmbeddedElectsItselfQuickly(t *testing.T) {
	t.Parallel()
	e, _ := startForTest(t)
	cfg := e.etcd.Config()
	if worst := time.Duration(cfg.ElectionMs+cfg.TickMs) * time.Millisecond; worst > 150*time.Millisecond {
		t.Errorf("election may wait %v (tick %d ms, election timeout %d ms)", worst, cfg.TickMs, cfg.ElectionMs)
	}
	if got := e.etcd.Server.Cfg.TickMs; got != cfg.TickMs {
		t.Errorf("server ticks every %d ms, configured %d", got, cfg.TickMs)
	}
}

// TestEmbeddedRetriesTakenPort: when the client port picked for the
// member is taken before etcd binds it, the start picks another; a port
// given by the caller that is taken is an error, and the directory is
// free again afterwards.
func TestEmbeddedRetriesTakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	real := freePort
	calls := 0
	freePort = func(host string) (string, error) {
		calls++
		if calls == 1 {
			return port, nil // taken by the time etcd binds it
		}
		return real(host)
	}
	defer func() { freePort = real }()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := StartEmbedded(ctx, EmbeddedConfig{Dir: dir})
	if err != nil {
		t.Fatalf("start with the first picked port taken: %v", err)
	}
	if calls < 2 || strings.HasSuffix(e.ClientConfig().Endpoints[0], ":"+port) {
		t.Fatalf("%d picks, endpoint %v; want a second pick, not port %s", calls, e.ClientConfig().Endpoints, port)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := StartEmbedded(ctx, EmbeddedConfig{Dir: dir, ClientAddr: taken.Addr().String()}); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("start on a given port that is taken: %v, want EADDRINUSE", err)
	}
	e, err = StartEmbedded(ctx, EmbeddedConfig{Dir: dir})
	if err != nil {
		t.Fatalf("start after a failed one: %v", err)
	}
	e.Close()
}

// TestEmbeddedRestartsAfterRaftSnapshots: the member keeps etcd's own
// number of catch-up entries in memory (fewer made a restart panic now and
// then: see embeddedCatchUpEntries), and writing well past several of its
// in-memory snapshots loses nothing, before or after a restart, which
// replays them.
func TestEmbeddedRestartsAfterRaftSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	start := func() *Embedded {
		e, err := StartEmbedded(ctx, EmbeddedConfig{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := start()
	defer func() { e.Close() }()
	if got := e.etcd.Server.Cfg.SnapshotCatchUpEntries; got < etcdserver.DefaultSnapshotCatchUpEntries {
		t.Fatalf("etcd keeps %d catch-up entries, fewer than its default %d", got, etcdserver.DefaultSnapshotCatchUpEntries)
	}
	const n = 600 // six in-memory snapshots
	s := New(e.Client())
	errs := make(chan error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				_, err := s.Create(ctx, fmt.Sprintf("/registry/configmaps/default/c%04d", i),
					fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c%04d","namespace":"default"},"data":{"i":"%d"}}`, i, i))
				errs <- err
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, s *Store) {
		t.Helper()
		l, err := s.List(ctx, "/registry/configmaps/", storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != n {
			t.Fatalf("%s: %d items, want %d", when, len(l.Items), n)
		}
		for i, it := range l.Items {
			if want := fmt.Sprintf(`"data":{"i":"%d"}`, i); !strings.Contains(string(it.Value), want) {
				t.Fatalf("%s: item %d is %s, want it to hold %s", when, i, it.Value, want)
			}
		}
	}
	check("after the writes", s)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = start()
	check("after a restart", New(e.Client()))
}

// TestLockDirWaitsForItsOwnLock: a lock this process released but a copy
// of its file still holds (a child between fork and exec, here a dup) is
// tried again until the copy is closed; one that another process holds
// fails at once (cmd/listwatch's TestServeLifecycle starts a second serve process on one data dir).
func TestLockDirWaitsForItsOwnLock(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	child, err := syscall.Dup(int(first.f.Fd())) // the forked child's copy
	if err != nil {
		t.Fatal(err)
	}
	first.unlock()
	var retries int
	lockRetried = func() {
		if retries++; retries == 1 {
			syscall.Close(child) // the child execs
		}
	}
	t.Cleanup(func() { lockRetried = nil })
	second, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock released by this process, held by a copy until it closed: %v", err)
	}
	second.unlock()
	if retries == 0 {
		t.Fatal("the lock was free at once: the test held no copy")
	}
}

// TestLockDirGivesUpOnItsOwnHeldLock: a lock this process still holds
// (a second server on the same dir) fails after selfLockWait.
func TestLockDirGivesUpOnItsOwnHeldLock(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer first.unlock()
	if _, err := lockDir(dir); !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), "this process") {
		t.Fatalf("second lock in this process: %v, want ErrDataDirInUse by this process", err)
	}
}
