package reliability

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver"
)

// serveProc is a `listwatch serve` child process.
type serveProc struct {
	cmd    *exec.Cmd
	url    string
	exited chan struct{}
}

// readyWriter watches the serve command's stdout for its ready line.
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan string
	sent  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		for _, line := range strings.Split(w.buf.String(), "\n") {
			if u, ok := strings.CutPrefix(line, "listwatch serving at "); ok {
				w.ready <- strings.TrimSpace(u)
				w.sent = true
				break
			}
		}
	}
	return len(p), nil
}

// startServe runs `listwatch serve` on dataDir and waits for it to be
// ready. The process is killed at the end of the test if still running.
func startServe(t *testing.T, dataDir string) *serveProc {
	t.Helper()
	buildServe(t)
	logf, err := os.OpenFile(filepath.Join(dataDir, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	out := &readyWriter{ready: make(chan string, 1)}
	cmd := exec.Command(serveBin, "serve", "--data-dir", dataDir, "--secure-port", "-1", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = out, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.kill)
	select {
	case p.url = <-out.ready:
	case <-p.exited:
		log, _ := os.ReadFile(filepath.Join(dataDir, "serve.log"))
		t.Fatalf("serve exited before ready:\n%s", log)
	case <-time.After(90 * time.Second):
		t.Fatal("serve not ready in 90s")
	}
	return p
}

// kill sends SIGKILL, as `kill -9` does, and waits for the exit.
func (p *serveProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// TestCrashServeProcess kills -9 the serve process during a write storm,
// restarts it on the same data dir, and checks that every acknowledged
// write is there and that resourceVersions continue upwards.
func TestCrashServeProcess(t *testing.T) {
	cycles, perCycle := 2, 150
	if long() {
		cycles, perCycle = 10, 1500
	}
	dir := t.TempDir()
	log := newAckLog()
	p := startServe(t, dir)
	for cycle := range cycles {
		r := configmapsOf(t, filepath.Join(dir, "kubeconfig"), "default")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); storm(ctx, r, "default", fmt.Sprintf("c%d", cycle), 4, log) }()
		awaitAcks(t, log, (cycle+1)*perCycle, 60*time.Second)
		p.kill() // mid-storm: writes are in flight
		cancel()
		<-done

		p = startServe(t, dir)
		r = configmapsOf(t, filepath.Join(dir, "kubeconfig"), "default")
		checked, lost := verifyAcks(t, r, log)
		checkRVAdvances(t, r, "default", log)
		t.Logf("cycle %d: killed -9 after %d acknowledged writes; %d checked, %d lost", cycle, log.count(), checked, lost)
	}
}

// TestCrashEtcdMember kills -9 etcd members (the leader, then a follower)
// of a 3-member process cluster during a write storm through an in-process
// server, restarts them, and checks every acknowledged write.
func TestCrashEtcdMember(t *testing.T) {
	kills, perPhase := 2, 100
	if long() {
		kills, perPhase = 10, 1000
	}
	cluster := startCluster(t)
	srv := startServer(t, "", func(o *apiserver.Options) { o.EtcdServers = cluster.Endpoints() })
	r := configmapsOf(t, srv.KubeconfigPath(), "default")
	log := newAckLog()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); storm(ctx, r, "default", "e", 4, log) }()
	defer func() { cancel(); <-done }()

	target := perPhase
	for k := range kills {
		awaitAcks(t, log, target, 60*time.Second)
		hctx, hcancel := context.WithTimeout(context.Background(), 60*time.Second)
		victim, err := cluster.Leader(hctx)
		if err != nil {
			hcancel()
			t.Fatal(err)
		}
		if k%2 == 1 {
			victim = (victim + 1) % cluster.Size() // a follower this time
		}
		if err := cluster.Kill(victim); err != nil {
			hcancel()
			t.Fatal(err)
		}
		target += perPhase
		awaitAcks(t, log, target, 90*time.Second) // the two survivors keep quorum
		if err := cluster.Start(victim); err != nil {
			hcancel()
			t.Fatal(err)
		}
		err = cluster.WaitHealthy(hctx)
		hcancel()
		if err != nil {
			t.Fatal(err)
		}
		target += perPhase
		t.Logf("kill %d: member %d killed -9 and restarted; %d writes acknowledged", k, victim, log.count())
	}
	awaitAcks(t, log, target, 60*time.Second)
	cancel()
	<-done
	checked, lost := verifyAcks(t, r, log)
	checkRVAdvances(t, r, "default", log)
	t.Logf("etcd member kills: %d writes checked, %d lost", checked, lost)
}

func configmapsOf(t *testing.T, kubeconfig, ns string) *client.Resource[*object.Unstructured] {
	t.Helper()
	cfg := adminConfig(t, kubeconfig)
	cfg.Timeout = 10 * time.Second
	return client.NewResource[*object.Unstructured](newClient(t, cfg), configmaps).Namespace(ns)
}

// checkRVAdvances writes once more and checks that the new
// resourceVersion is above every acknowledged one.
func checkRVAdvances(t *testing.T, r *client.Resource[*object.Unstructured], ns string, log *ackLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj, err := r.Create(ctx, configMap(ns, fmt.Sprintf("probe-%d", time.Now().UnixNano()), nil))
	if err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if rv := mustRV(obj); rv <= log.maxRV {
		t.Errorf("resourceVersion went backwards: %d after acknowledged %d", rv, log.maxRV)
	}
}
