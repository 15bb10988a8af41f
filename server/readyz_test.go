package server

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// unreachableStore answers every CurrentRevision with an error that
// carries internal detail (an address, say) a client must not see.
type unreachableStore struct {
	storage.Interface
	fail atomic.Bool
}

func (s *unreachableStore) CurrentRevision(ctx context.Context) (int64, error) {
	if s.fail.Load() {
		return 0, errors.New("dial tcp 10.1.2.3:2379: secret-internal-detail")
	}
	return s.Interface.CurrentRevision(ctx)
}

// /readyz is readable anonymously, so like kube-apiserver it names the
// failed check and withholds its reason.
func TestReadyzWithholdsReason(t *testing.T) {
	e := etcdtest.Start(t)
	store := &unreachableStore{Interface: e.Store}
	env := startEnv(t, store, e)
	if r := env.do("GET", "/readyz", nil); r.code != 200 {
		t.Fatalf("healthy /readyz: %d %s", r.code, r.body)
	}
	store.fail.Store(true)
	r := env.do("GET", "/readyz", nil)
	body := string(r.body)
	if r.code != 500 || !strings.Contains(body, "[-]etcd failed: reason withheld") {
		t.Fatalf("failing /readyz: %d %q", r.code, body)
	}
	if strings.Contains(body, "secret-internal-detail") || strings.Contains(body, "10.1.2.3") {
		t.Fatalf("/readyz leaks the error: %q", body)
	}
}
