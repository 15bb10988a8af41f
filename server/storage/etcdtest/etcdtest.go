// Package etcdtest starts an embedded etcd for tests.
//
//	func TestX(t *testing.T) {
//		e := etcdtest.Start(t)
//		rev, err := e.Store.Create(ctx, "/registry/pods/default/a", value)
//		…
//	}
//
// Every call starts its own single-member etcd in t.TempDir() on free
// loopback ports, so parallel tests do not share state. Cleanup closes
// the client and stops the member, waiting for its goroutines, so a
// package using goleak.VerifyTestMain stays clean. etcd logs only
// errors.
package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/server/storage/etcd"
)

// Etcd is a running test member.
type Etcd struct {
	// Store is a storage.Interface over Client.
	Store *etcd.Store
	// Client is connected to the member.
	Client *clientv3.Client
	// Endpoints are the member's client URLs ("https://127.0.0.1:port");
	// they take only the client certificate in Dir/pki.
	Endpoints []string
	// Dir is the member's data directory.
	Dir string
}

// Start starts a member and registers its shutdown with t.Cleanup. It
// fails the test if the member does not start within a minute.
func Start(t testing.TB) *Etcd {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{
		Dir: dir,
		// Short, so that tests of progress notifications and bookmarks
		// do not wait long.
		ProgressNotifyInterval: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("etcdtest: close: %v", err)
		}
	})
	return &Etcd{
		Store:     etcd.New(e.Client()),
		Client:    e.Client(),
		Endpoints: e.Endpoints(),
		Dir:       dir,
	}
}
