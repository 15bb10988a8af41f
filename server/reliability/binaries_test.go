package reliability

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/internal/testsupport"
	"github.com/listwatch/listwatch/server/internal/testsupport/etcdcluster"
)

// Binaries are built at most once per test process into binDir, which
// TestMain removes; go's build cache makes repeated runs cheap.
var (
	binDirOnce sync.Once
	binDir     string
	binDirErr  error

	serveOnce sync.Once
	serveBin  string
	serveErr  error

	etcdOnce sync.Once
	etcdBin  string
	etcdErr  error
)

func binaryDir(t testing.TB) string {
	t.Helper()
	binDirOnce.Do(func() { binDir, binDirErr = os.MkdirTemp("", "listwatch-reliability-bin") })
	if binDirErr != nil {
		t.Fatal(binDirErr)
	}
	return binDir
}

// buildServe builds cmd/listwatch.
func buildServe(t testing.TB) {
	t.Helper()
	dir := binaryDir(t)
	serveOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		serveBin = filepath.Join(dir, "listwatch")
		if out, err := testsupport.GoBuild(ctx, serveBin, "github.com/listwatch/listwatch/server/cmd/listwatch").CombinedOutput(); err != nil {
			serveErr = &buildError{err: err, out: string(out)}
		}
	})
	if serveErr != nil {
		t.Fatalf("build listwatch: %v", serveErr)
	}
}

// buildEtcd builds internal/testsupport/etcdmember.
func buildEtcd(t testing.TB) {
	t.Helper()
	dir := binaryDir(t)
	etcdOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		etcdBin, etcdErr = etcdcluster.Build(ctx, dir)
	})
	if etcdErr != nil {
		t.Fatalf("build etcd-member: %v", etcdErr)
	}
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// startCluster runs a 3-member etcd cluster as processes until the test
// ends.
func startCluster(t *testing.T) *etcdcluster.Cluster {
	t.Helper()
	buildEtcd(t)
	c, err := etcdcluster.New(etcdBin, t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.StartAll(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}
