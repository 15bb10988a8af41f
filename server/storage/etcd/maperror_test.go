package etcd

import (
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/listwatch/listwatch/server/storage"
)

// TestMapErrorBackend: an etcd error that no storage error stands for is
// a storage.BackendError holding etcd's own error (the server answers
// it with that error's text, as kube-apiserver does); revision and size
// errors are storage's.
func TestMapErrorBackend(t *testing.T) {
	var be *storage.BackendError
	err := mapError(rpctypes.ErrTimeout, 0)
	if !errors.As(err, &be) || be.Err != rpctypes.ErrTimeout || !errors.Is(err, rpctypes.ErrTimeout) {
		t.Fatalf("timeout: %#v", err)
	}
	if err.Error() != "etcd: etcdserver: request timed out" {
		t.Fatalf("text %q", err)
	}
	for _, e := range []error{rpctypes.ErrCompacted, rpctypes.ErrFutureRev, rpctypes.ErrRequestTooLarge} {
		if errors.As(mapError(e, 5), &be) {
			t.Errorf("%v mapped to a backend error", e)
		}
	}
}
