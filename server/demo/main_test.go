package demo_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
	"github.com/listwatch/listwatch/server/demo"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startServer runs an in-process listwatch server on 127.0.0.1 for the
// test and returns a client of it.
func startServer(t *testing.T) *client.Client {
	t.Helper()
	// No controllers: the demo's mirror controller mirrors every
	// ConfigMap of its namespace, kube-root-ca.crt included.
	srv := apiservertest.Start(t, "", func(o *apiserver.Options) { o.Controllers = []string{} })
	cfg, err := client.LoadKubeconfig(srv.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	rctx, rcancel := context.WithTimeout(t.Context(), time.Minute)
	defer rcancel()
	if err := demo.WaitReady(rctx, c); err != nil {
		t.Fatal(err)
	}
	return c
}
