// Package apiservertest runs an in-process listwatch server for tests: on
// a free 127.0.0.1 port, with embedded etcd under a temp dir, quiet logs,
// stopped (and waited for) when the test ends. Like envtest, it runs no
// controllers unless asked (Options.Controllers = WithControllers): a
// test then sees only its own writes.
package apiservertest

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/apiserver"
)

// WithControllers runs every default controller in the server, as
// `listwatch serve` does.
func WithControllers(o *apiserver.Options) { o.Controllers = nil }

// Server is a running test server.
type Server struct {
	*apiserver.APIServer
	// Dir is the server's data dir; start another Server on it to restart.
	Dir string

	once sync.Once
	stop func()
}

// Start runs a server with its data under dir (a new temp dir when dir is
// "") and returns once it is ready. mutate may change the options first.
// The server stops when the test ends, or earlier with Stop.
func Start(t testing.TB, dir string, mutate ...func(*apiserver.Options)) *Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	o := apiserver.Options{
		DataDir: dir,
		Port:    -1,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		// No controllers: kube-apiserver alone, as envtest. Their writes
		// (a lease renewed every 2s, kube-root-ca.crt in every
		// namespace) would move revisions and lists under the tests.
		Controllers: []string{},
	}
	for _, m := range mutate {
		m(&o)
	}
	srv, err := apiserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	case <-time.After(90 * time.Second):
		cancel()
		<-done
		t.Fatal("server not ready in 90s")
	}
	s := &Server{APIServer: srv, Dir: dir}
	s.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server Run: %v", err)
		}
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the server and waits for it; later calls do nothing.
func (s *Server) Stop() { s.once.Do(s.stop) }
