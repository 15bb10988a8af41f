package server

import (
	"context"
	"errors"
	"net/http/httptest"
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

// The health paths are kube's handlers: ?verbose lists the checks, each
// check has its own path (which, unlike the root, says why it failed:
// only users granted it may read it), ?exclude= skips one, a failure
// anywhere is a 500, and other paths below them are Go's plain 404.
func TestHealthChecksAsKube(t *testing.T) {
	e := etcdtest.Start(t)
	store := &unreachableStore{Interface: e.Store}
	env := startEnv(t, store, e)
	want := "[+]ping ok\n[+]etcd ok\n[+]poststarthook/listwatch-bootstrap ok\n[+]shutdown ok\nreadyz check passed\n"
	if r := env.do("GET", "/readyz?verbose", nil); r.code != 200 || string(r.body) != want {
		t.Fatalf("/readyz?verbose: %d %q, want %q", r.code, r.body, want)
	}
	if r := env.do("GET", "/livez?verbose", nil); r.code != 200 || !strings.HasSuffix(string(r.body), "[+]poststarthook/listwatch-bootstrap ok\nlivez check passed\n") {
		t.Fatalf("/livez?verbose: %d %q", r.code, r.body)
	}
	for _, p := range []string{"/healthz/ping", "/livez/etcd", "/readyz/shutdown", "/readyz/poststarthook/listwatch-bootstrap"} {
		if r := env.do("GET", p, nil); r.code != 200 || string(r.body) != "ok" {
			t.Errorf("%s: %d %q", p, r.code, r.body)
		}
	}
	for _, p := range []string{"/readyz/nope", "/healthz/", "/livez/log/x", "/readyz/shutdown/"} {
		if r := env.do("GET", p, nil); r.code != 404 || string(r.body) != "404 page not found\n" {
			t.Errorf("%s: %d %q, want Go's plain 404", p, r.code, r.body)
		}
	}
	store.fail.Store(true)
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		r := env.do("GET", p, nil)
		if r.code != 500 || !strings.Contains(string(r.body), "[-]etcd failed: reason withheld\n") {
			t.Errorf("%s with etcd down: %d %q", p, r.code, r.body)
		}
	}
	if r := env.do("GET", "/readyz?exclude=etcd", nil); r.code != 200 || string(r.body) != "ok" {
		t.Errorf("/readyz?exclude=etcd with etcd down: %d %q", r.code, r.body)
	}
	if r := env.do("GET", "/readyz/etcd", nil); r.code != 500 || !strings.Contains(string(r.body), "secret-internal-detail") {
		t.Errorf("/readyz/etcd with etcd down: %d %q, want the reason", r.code, r.body)
	}
}

// Once the server is stopping, /readyz fails its shutdown check, as
// kube's does, so that load balancers stop sending it requests.
func TestReadyzFailsWhenStopping(t *testing.T) {
	e := etcdtest.Start(t)
	env := startEnvNoCleanup(t, e.Store)
	env.stop()
	rec := httptest.NewRecorder()
	env.srv.health["/readyz"].ServeHTTP(rec, httptest.NewRequest("GET", "/readyz?verbose", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "[-]shutdown failed: reason withheld\n") {
		t.Fatalf("/readyz of a stopped server: %d %q", rec.Code, rec.Body)
	}
}
