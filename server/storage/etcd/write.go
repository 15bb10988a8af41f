package etcd

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/server/storage"
)

// Create puts value under key if the key has never been written since
// its last delete (its create revision is 0).
func (s *Store) Create(ctx context.Context, key string, value []byte) (rev int64, err error) {
	defer s.observe("create", key, time.Now(), &err)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(putOp(key, value)).
		Commit()
	if err != nil {
		return 0, mapError(err, 0)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: %s", storage.ErrExists, key)
	}
	return resp.Header.Revision, nil
}

// Update replaces key's value if its mod revision is expectRev. An
// expectRev of 0 or less updates unconditionally, but still only a key
// that exists: Update never creates.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectRev int64) (rev int64, err error) {
	defer s.observe("update", key, time.Now(), &err)
	resp, err := s.cli.Txn(ctx).
		If(revisionIs(key, expectRev)).
		Then(putOp(key, value)).
		Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return 0, mapError(err, 0)
	}
	if !resp.Succeeded {
		return 0, preconditionFailed(resp, key, expectRev)
	}
	return resp.Header.Revision, nil
}

// Delete removes key if its mod revision is expectRev (any, if 0) and
// returns its last value, whose Revision and resourceVersion are the
// delete's revision.
func (s *Store) Delete(ctx context.Context, key string, expectRev int64) (kv storage.KV, err error) {
	defer s.observe("delete", key, time.Now(), &err)
	resp, err := s.cli.Txn(ctx).
		If(revisionIs(key, expectRev)).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return storage.KV{}, mapError(err, 0)
	}
	if !resp.Succeeded {
		return storage.KV{}, preconditionFailed(resp, key, expectRev)
	}
	prev := resp.Responses[0].GetResponseDeleteRange().GetPrevKvs()
	if len(prev) == 0 {
		// The compare saw the key, so the delete in the same txn did too.
		return storage.KV{}, fmt.Errorf("%w: %s", storage.ErrNotFound, key)
	}
	return toKV(prev[0], resp.Header.Revision)
}

// putOp puts value at key. clientv3.OpPut takes the value as a string
// and copies it into the op's own bytes before it returns, so value is
// handed over without a first copy into a string (a value's size less to
// allocate per write).
func putOp(key string, value []byte) clientv3.Op {
	return clientv3.OpPut(key, unsafe.String(unsafe.SliceData(value), len(value)))
}

// revisionIs is the precondition of Update and Delete: the key exists,
// at expectRev when that is positive.
func revisionIs(key string, expectRev int64) clientv3.Cmp {
	if expectRev <= 0 {
		return clientv3.Compare(clientv3.ModRevision(key), ">", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", expectRev)
}

// preconditionFailed reads the Else branch's get: a missing key is
// ErrNotFound, a present one ErrConflict.
func preconditionFailed(resp *clientv3.TxnResponse, key string, expectRev int64) error {
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return fmt.Errorf("%w: %s", storage.ErrNotFound, key)
	}
	return fmt.Errorf("%w: %s is at revision %d, not %d", storage.ErrConflict, key, kvs[0].ModRevision, expectRev)
}
