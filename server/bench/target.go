package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/apiserver"
)

// TargetOptions say which server to measure.
type TargetOptions struct {
	// Kubeconfig and Context select a server, as kubectl does. An empty
	// Kubeconfig starts an embedded listwatch server instead (it ignores
	// $KUBECONFIG on purpose: "listwatch bench" with no flags must never
	// load a production cluster by accident).
	Kubeconfig string
	Context    string
	// DataDir holds the embedded server's data; empty: a new temporary
	// directory, removed by Close.
	DataDir string
	// ServerPID, when the server is a local process, lets "bench watch"
	// read its CPU time from /proc.
	ServerPID int
	// StorePID is the pid of a storage process separate from the server
	// (etcd beside kube-apiserver): its CPU time is added to the
	// server's.
	StorePID int
	// Logger for the embedded server; nil discards.
	Logger *slog.Logger
}

// Target is a connected server: a client for it, and for an embedded
// server the means to stop it.
type Target struct {
	Client *client.Client
	// KubeconfigPath and Context reach the same server from another
	// process (the informer children, client-go).
	KubeconfigPath string
	Context        string
	Info           TargetInfo
	// ServerPID is the server's process id when known; for an embedded
	// server it is this process, and CPU is read with getrusage.
	ServerPID int
	// StorePID is a separate storage process's id, or 0.
	StorePID int

	stop func() error
}

// config is the client configuration bench's clients of t use.
func (t *Target) config() (*client.Config, error) {
	cfg, err := client.LoadKubeconfig(t.KubeconfigPath, t.Context)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1 // measure the server, not our client's token bucket
	cfg.UserAgent = "listwatch-bench"
	// gzip, as client-go asks every server for it (the library's default
	// asks a loopback server for none): bench measures what servers cost
	// the clients they have.
	cfg.Compression = client.CompressionGzip
	return cfg, nil
}

// Connect reaches the server opts select. With no kubeconfig it starts an
// embedded server, which runs on a goroutine until Close: call Close
// before the process exits.
func Connect(ctx context.Context, opts TargetOptions) (*Target, error) {
	t := &Target{KubeconfigPath: opts.Kubeconfig, Context: opts.Context, ServerPID: opts.ServerPID, StorePID: opts.StorePID, stop: func() error { return nil }}
	if opts.Kubeconfig == "" {
		if err := t.startEmbedded(ctx, opts); err != nil {
			return nil, err
		}
	}
	cfg, err := t.config()
	if err != nil {
		_ = t.Close()
		return nil, err
	}
	t.Client, err = client.New(cfg)
	if err != nil {
		_ = t.Close()
		return nil, err
	}
	t.Info.Host = cfg.Host
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := t.Client.GetJSON(ctx, "/version", &version); err == nil {
		t.Info.ServerVersion = version.GitVersion
	}
	return t, nil
}

func (t *Target) startEmbedded(ctx context.Context, opts TargetOptions) error {
	dir, removeDir := opts.DataDir, func() error { return nil }
	if dir == "" {
		d, err := os.MkdirTemp("", "listwatch-bench-")
		if err != nil {
			return err
		}
		dir, removeDir = d, func() error { return os.RemoveAll(d) }
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The embedded server's Kubernetes libraries log through klog, whose
	// logger is the process's: the program sets it, once, before any
	// server starts (the listwatch command's bench does; kube's
	// controllers read it from goroutines nothing can wait for, so
	// setting it here, per server, raced with an earlier server's).
	// No controllers: the bench counts what it writes, and the root CA
	// publisher would add kube-root-ca.crt to its namespace.
	srv, err := apiserver.New(apiserver.Options{DataDir: dir, Port: -1, Logger: logger, Controllers: []string{}})
	if err != nil {
		return errors.Join(err, removeDir())
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		cancel()
		return errors.Join(fmt.Errorf("bench: embedded server: %w", err), removeDir())
	case <-ctx.Done():
		cancel()
		return errors.Join(ctx.Err(), <-done, removeDir())
	case <-time.After(2 * time.Minute):
		cancel()
		return errors.Join(errors.New("bench: embedded server not ready after 2m"), <-done, removeDir())
	}
	t.KubeconfigPath = srv.KubeconfigPath()
	t.Context = ""
	t.Info.Embedded = true
	t.ServerPID = 0 // this process: getrusage
	t.stop = func() error {
		cancel()
		err := <-done
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return errors.Join(err, removeDir())
	}
	return nil
}

// Close stops an embedded server (and removes its temporary data) and
// releases idle connections.
func (t *Target) Close() error {
	if t.Client != nil {
		t.Client.CloseIdleConnections()
	}
	return t.stop()
}
