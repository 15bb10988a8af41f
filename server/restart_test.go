package server

import (
	"context"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage/etcd"
)

// startEnvOnDir starts an embedded etcd on dir and a server over it; the
// function it returns stops both, so that a test can start them again on
// the same data.
func startEnvOnDir(t *testing.T, dir string) (*env, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e := startEnvNoCleanup(t, etcd.New(m.Client()))
	return e, func() {
		e.stop()
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestRestart stops server and etcd and starts both on the same data
// directory: objects, resourceVersions and CRDs survive.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() (*env, func()) { return startEnvOnDir(t, dir) }
	e, stop := start()
	c := e.must(201, "POST", cmPath, cm("kept", nil, map[string]string{"a": "b"}))
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	e.must(201, "POST", "/apis/example.com/v1/namespaces/default/widgets", widget("w", "v1"))
	stop()

	e2, stop2 := start()
	defer stop2()
	got := e2.must(200, "GET", cmPath+"/kept", nil)
	if path(got, "metadata", "resourceVersion") != path(c, "metadata", "resourceVersion") || path(got, "metadata", "uid") != path(c, "metadata", "uid") {
		t.Fatalf("after restart %v, before %v", got["metadata"], c["metadata"])
	}
	e2.must(200, "GET", "/apis/example.com/v1/namespaces/default/widgets/w", nil)
}
