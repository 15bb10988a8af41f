package kubeapiserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/internal/pki"
	"github.com/listwatch/listwatch/server/storage/etcd"
)

// ErrStart wraps every failure to start the server.
var ErrStart = errors.New("kubeapiserver: did not start")

// Options configure Start. The zero value is usable.
type Options struct {
	// Binary is the kube-apiserver to run; empty: Binary().
	Binary string
	// Dir holds everything the server needs (etcd data, certificates,
	// keys, kubeconfig, log). Empty: a new temporary directory that Close
	// removes. A given Dir is kept.
	Dir string
	// ExtraArgs are appended to the command line (a later flag wins).
	ExtraArgs []string
	// StartTimeout bounds the whole start; default 2 minutes.
	StartTimeout time.Duration
}

// Server is a running kube-apiserver and its etcd.
type Server struct {
	// Dir is the working directory (see Options.Dir).
	Dir string
	// URL is "https://127.0.0.1:<port>".
	URL string
	// KubeconfigPath is an admin kubeconfig for URL.
	KubeconfigPath string
	// LogPath receives the kube-apiserver's stdout and stderr.
	LogPath string
	// Creds are the CA, the serving certificate, the admin's certificate
	// and token (user admin, group system:masters).
	Creds *pki.Credentials
	// UserToken authenticates UserName, who has no group.
	UserToken string
	// PID is the kube-apiserver's process id (and process group id).
	PID int
	// StartupTime is the time from starting the process to /readyz
	// answering ok; EtcdStartupTime the embedded etcd's start before it.
	StartupTime, EtcdStartupTime time.Duration

	etcd    *etcd.Embedded
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error // set before exited closes
	ownDir  bool
	closed  bool
}

// Start starts etcd and kube-apiserver and returns once /readyz says ok.
// ctx bounds only the start.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	bin := opts.Binary
	if bin == "" {
		if bin, err = Binary(); err != nil {
			return nil, err
		}
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	s := &Server{Dir: opts.Dir}
	if s.Dir == "" {
		if s.Dir, err = os.MkdirTemp("", "kube-apiserver-"); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStart, err)
		}
		s.ownDir = true
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	if s.Dir, err = filepath.Abs(s.Dir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}

	t0 := time.Now()
	if s.etcd, err = etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: filepath.Join(s.Dir, "etcd")}); err != nil {
		return nil, fmt.Errorf("%w: etcd: %w", ErrStart, err)
	}
	s.EtcdStartupTime = time.Since(t0)

	pkiDir := filepath.Join(s.Dir, "pki")
	if s.Creds, err = pki.EnsureCredentials(pkiDir, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if s.UserToken, err = appendUserToken(s.Creds.Path(pki.TokenFile)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	saKey := filepath.Join(pkiDir, "service-account.key")
	if err := writeServiceAccountKey(saKey); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	s.LogPath = filepath.Join(s.Dir, "kube-apiserver.log")

	// The port is free when chosen; another process may take it before
	// kube-apiserver binds it, so a bind failure picks another.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStart, err)
		}
		s.URL = "https://127.0.0.1:" + strconv.Itoa(port)
		t1 := time.Now()
		if err := s.startProcess(bin, port, saKey, opts.ExtraArgs); err != nil {
			return nil, err
		}
		err = s.waitReady(ctx)
		if err == nil {
			s.StartupTime = time.Since(t1)
			break
		}
		log := s.readLog()
		inUse := s.processExited() && bytes.Contains(log, []byte("address already in use"))
		if !inUse || attempt == 2 {
			return nil, fmt.Errorf("%w: %w\n%s", ErrStart, err, logExcerpt(log))
		}
		_ = s.stopProcess()
	}

	s.KubeconfigPath = filepath.Join(s.Dir, "kubeconfig")
	if err := pki.WriteKubeconfig(s.KubeconfigPath, s.URL, s.Creds); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	return s, nil
}

// args is the kube-apiserver command line: everything on loopback, only
// what a client library test needs, nothing that slows the start.
func (s *Server) args(port int, saKey string) []string {
	ec := s.etcd.ClientConfig()
	p := s.Creds.Path
	return []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + p(pki.ServingCertFile),
		"--tls-private-key-file=" + p(pki.ServingKeyFile),
		"--client-ca-file=" + p(pki.CAFile),
		"--token-auth-file=" + p(pki.TokenFile),
		"--anonymous-auth=false",
		"--authorization-mode=RBAC",
		"--etcd-servers=" + strings.Join(ec.Endpoints, ","),
		"--etcd-cafile=" + ec.CAFile,
		"--etcd-certfile=" + ec.CertFile,
		"--etcd-keyfile=" + ec.KeyFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// Endpoints may not hold a loopback address: do not publish one.
		"--endpoint-reconciler-type=none",
		// No controller manager creates service accounts in namespaces.
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--enable-logs-handler=false",
		"--cert-dir=" + filepath.Join(s.Dir, "certs"),
		"--v=0",
	}
}

func (s *Server) startProcess(bin string, port int, saKey string, extra []string) error {
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, append(s.args(port, saKey), extra...)...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so a terminal's Ctrl-C reaches only the test
	// (which then stops it); and killed by the kernel if this process
	// dies without calling Close.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig fires when the thread that forked the child ends, not the
	// process: start and wait on one goroutine locked to its thread, so
	// that thread lives exactly as long as the child.
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.waitErr = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStart, bin, err)
	}
	s.cmd, s.PID, s.exited = cmd, cmd.Process.Pid, exited
	return nil
}

func (s *Server) processExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// waitReady polls /readyz as admin until it answers 200 "ok", the process
// exits or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Creds.CAPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var last error
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+s.Creds.AdminToken)
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Equal(bytes.TrimSpace(body), []byte("ok")) {
				return nil
			}
			last = fmt.Errorf("/readyz: %d %s", resp.StatusCode, bytes.TrimSpace(body))
		} else {
			last = err
		}
		select {
		case <-s.exited:
			return fmt.Errorf("kube-apiserver exited: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// readLog is the whole log, or nothing if it cannot be read.
func (s *Server) readLog() []byte {
	data, _ := os.ReadFile(s.LogPath)
	return data
}

// logExcerpt is what an error message shows of a log: its klog error and
// fatal lines (the cause of a failed start is usually one of them, long
// before the end), then its last lines, each cut short. A whole tail of
// the log pushed the test's own failure line out of sight in CI's
// excerpt of the output.
func logExcerpt(log []byte) string {
	const maxErrors, maxTail, maxLine = 10, 12, 300
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	tailFrom := max(0, len(lines)-maxTail)
	var b strings.Builder
	n := 0
	for _, l := range lines[:tailFrom] {
		if n < maxErrors && len(l) > 1 && (l[0] == 'E' || l[0] == 'F') && l[1] >= '0' && l[1] <= '9' {
			b.WriteString(cut(l, maxLine) + "\n")
			n++
		}
	}
	if tailFrom > 0 {
		fmt.Fprintf(&b, "[… %d lines of the log; its last %d:]\n", tailFrom, len(lines)-tailFrom)
	}
	for _, l := range lines[tailFrom:] {
		b.WriteString(cut(l, maxLine) + "\n")
	}
	return b.String()
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// stopProcess sends SIGTERM, SIGKILL after 10s, and waits for the
// process to exit. It signals through the process's handle (a pidfd),
// never by number: once the process has exited and been reaped its
// number, and so its process group's, is free, and with Linux's default
// pid_max of 32768 a busy test run reuses numbers within minutes; a kill
// by number could then stop another test's kube-apiserver (kube-apiserver
// starts no child processes, so there is no group to kill).
func (s *Server) stopProcess() error {
	if s.cmd == nil {
		return nil
	}
	defer func() { s.cmd = nil }()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	return nil
}

// Close stops kube-apiserver, then etcd, and removes
// the directory when Start made it. It is safe to call more than once.
func (s *Server) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	errs := []error{s.stopProcess()}
	if s.etcd != nil {
		errs = append(errs, s.etcd.Close())
	}
	if s.ownDir {
		errs = append(errs, os.RemoveAll(s.Dir))
	}
	return errors.Join(errs...)
}

// Etcd is the client of the embedded etcd (for compaction, say).
func (s *Server) Etcd() *clientv3.Client { return s.etcd.Client() }

// Compact compacts etcd at its current revision and returns it: every
// older resourceVersion is then gone from etcd.
func (s *Server) Compact(ctx context.Context) (int64, error) {
	st, err := s.etcd.Client().Get(ctx, "compact-probe")
	if err != nil {
		return 0, err
	}
	rev := st.Header.Revision
	if _, err := s.etcd.Client().Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	return rev, nil
}

// AdminConfig is a client configuration for user admin by bearer token.
func (s *Server) AdminConfig() *client.Config {
	return &client.Config{Host: s.URL, CAData: s.Creds.CAPEM, BearerToken: s.Creds.AdminToken}
}

// AdminCertConfig is a client configuration for user admin by client
// certificate only.
func (s *Server) AdminCertConfig() *client.Config {
	return &client.Config{Host: s.URL, CAData: s.Creds.CAPEM, CertData: s.Creds.AdminCertPEM, KeyData: s.Creds.AdminKeyPEM}
}

// UserConfig is a client configuration for UserName by bearer token.
func (s *Server) UserConfig() *client.Config {
	return &client.Config{Host: s.URL, CAData: s.Creds.CAPEM, BearerToken: s.UserToken}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
