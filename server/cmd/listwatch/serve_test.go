package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
)

// TestServeLifecycle runs the built binary: a second serve on a data dir
// in use fails at once, naming the dir and the first serve's PID, and
// SIGTERM ends a serve that is still starting, even one whose etcd is
// stuck opening its database.
func TestServeLifecycle(t *testing.T) {
	cliLeakCheck(t)
	bin := commandPath(t)
	serve := func(t *testing.T, dataDir string) *proc {
		return startCLI(t, bin, nil, "serve", "--data-dir", dataDir, "--secure-port", "-1", "--log-level", "error")
	}

	t.Run("SecondServeOnSameDataDir", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "data")
		first := serve(t, dataDir)
		if l := first.next(t); !strings.HasPrefix(l, "listwatch serving at https://") {
			t.Fatalf("first serve printed %q", l)
		}
		servingBefore, err := os.ReadFile(filepath.Join(dataDir, "serving.crt"))
		if err != nil {
			t.Fatal(err)
		}
		// Another host name would make a second serve issue a new serving
		// certificate, were it to get that far.
		second := startCLI(t, bin, nil, "serve", "--data-dir", dataDir, "--secure-port", "-1", "--log-level", "error",
			"--tls-san", "second.example")
		err = waitExit(t, second, 10*time.Second)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("second serve: %v, want exit status 1; stderr:\n%s", err, second.stderr)
		}
		msg := second.stderr.String()
		for _, want := range []string{dataDir, "data directory in use", fmt.Sprintf("process %d", first.cmd.Process.Pid)} {
			if !strings.Contains(msg, want) {
				t.Errorf("second serve's error does not say %q:\n%s", want, msg)
			}
		}
		if after, err := os.ReadFile(filepath.Join(dataDir, "serving.crt")); err != nil || string(after) != string(servingBefore) {
			t.Errorf("second serve rewrote the first one's serving certificate (err %v)", err)
		}
		// The first one is unharmed and stops cleanly.
		first.interrupt(t)
	})

	t.Run("SIGTERMWhileEtcdBlocks", func(t *testing.T) {
		// Another program holds the lock of etcd's database, so etcd
		// blocks opening it (for ever, in etcd's code).
		dataDir := filepath.Join(t.TempDir(), "data")
		db := filepath.Join(dataDir, "etcd", "member", "snap", "db")
		if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(db, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		p := serve(t, dataDir)
		waitOpen(t, p, db)
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := waitExit(t, p, 10*time.Second); err != nil {
			t.Fatalf("serve after SIGTERM: %v, want exit status 0; stderr:\n%s", err, p.stderr)
		}
	})

	t.Run("SIGTERMWhileEtcdStarts", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "data")
		p := serve(t, dataDir)
		waitOpen(t, p, filepath.Join(dataDir, "etcd", "member", "snap", "db"))
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := waitExit(t, p, 20*time.Second); err != nil {
			t.Fatalf("serve after SIGTERM: %v, want exit status 0; stderr:\n%s", err, p.stderr)
		}
	})
}

// waitExit waits up to d for p to exit and returns its exit error.
func waitExit(t *testing.T, p *proc, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-done
		t.Fatalf("still running %v later; stderr:\n%s", d, p.stderr)
		return nil
	}
}

// waitOpen waits until p has path open: it has got as far as opening it.
func waitOpen(t *testing.T, p *proc, path string) {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ents, err := os.ReadDir(fdDir)
		if err != nil {
			t.Skipf("cannot read %s: %v", fdDir, err)
		}
		for _, e := range ents {
			if target, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && target == path {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not open %s in 30s; stderr:\n%s", path, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeUnknownController: --controllers naming no controller stops
// serve at once with kube-controller-manager's words for it.
func TestServeUnknownController(t *testing.T) {
	cliLeakCheck(t)
	bin := commandPath(t)
	p := startCLI(t, bin, nil, "serve", "--data-dir", filepath.Join(t.TempDir(), "data"), "--secure-port", "-1",
		"--log-level", "error", "--controllers", "*,-nope")
	err := waitExit(t, p, 10*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("serve: %v, want exit status 1; stderr:\n%s", err, p.stderr)
	}
	if msg := p.stderr.String(); !strings.Contains(msg, `--controllers: controllers: unknown controller: "nope" is not in the list of known controllers`) {
		t.Fatalf("stderr:\n%s", msg)
	}
}

// TestServeGCPercent: serve tunes the collector between cachedGCPercent
// and defaultGCPercent (a fresh server's heap is mostly not cached values:
// above the middle) unless GOGC is set in its environment, as its /metrics
// report.
func TestServeGCPercent(t *testing.T) {
	cliLeakCheck(t)
	bin := commandPath(t)
	for _, tc := range []struct {
		env  string
		want string
	}{
		{"GOGC=", "tuned"},
		{"GOGC=150", "150"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			p := startCLI(t, bin, []string{tc.env}, "serve", "--data-dir", dataDir, "--secure-port", "-1", "--log-level", "error")
			if l := p.next(t); !strings.HasPrefix(l, "listwatch serving at https://") {
				t.Fatalf("serve printed %q; stderr:\n%s", l, p.stderr)
			}
			cfg, err := client.LoadKubeconfig(filepath.Join(dataDir, "kubeconfig"), "")
			if err != nil {
				t.Fatal(err)
			}
			c, err := client.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(t.Context(), "GET", "/metrics", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			c.CloseIdleConnections()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
			}
			got := ""
			for l := range strings.Lines(string(body)) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), "go_gc_gogc_percent "); ok {
					got = v
				}
			}
			if tc.want == "tuned" {
				if p, err := strconv.Atoi(got); err != nil || p > defaultGCPercent || p < (defaultGCPercent+cachedGCPercent)/2 {
					t.Errorf("go_gc_gogc_percent %q, want between %d and %d", got, (defaultGCPercent+cachedGCPercent)/2, defaultGCPercent)
				}
			} else if got != tc.want {
				t.Errorf("go_gc_gogc_percent %q, want %q", got, tc.want)
			}
			p.interrupt(t)
		})
	}
}
