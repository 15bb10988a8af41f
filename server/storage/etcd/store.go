package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// Store is a storage.Interface over an etcd v3 client. It is safe for
// concurrent use and holds no goroutines of its own; closing the client
// is the caller's business.
type Store struct {
	cli     *clientv3.Client
	metrics *metrics
	typeOf  func(key string) string
	// compacted is the newest revision this Store has compacted etcd to,
	// or seen a watch report compacted (CompactRevision).
	compacted atomic.Int64
}

var (
	_ storage.Interface         = (*Store)(nil)
	_ storage.CompactRevisioner = (*Store)(nil)
)

// Option configures a Store.
type Option func(*Store)

// WithRegisterer records request metrics on r. Several Stores may share
// one Registerer: the second finds the collectors already there and
// uses them.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(s *Store) { s.metrics = newMetrics(r) }
}

// WithTypeLabel sets how a key maps to the metrics' "type" label. The
// default is the key's first segment after "/registry/" (e.g. "pods").
func WithTypeLabel(f func(key string) string) Option {
	return func(s *Store) { s.typeOf = f }
}

// New returns a Store that reads and writes through cli.
func New(cli *clientv3.Client, opts ...Option) *Store {
	s := &Store{cli: cli, typeOf: defaultType}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Client returns the etcd client the Store uses.
func (s *Store) Client() *clientv3.Client { return s.cli }

func defaultType(key string) string {
	k := strings.TrimPrefix(key, "/registry/")
	if i := strings.IndexByte(k, '/'); i >= 0 {
		k = k[:i]
	}
	if k == "" {
		return "unknown"
	}
	return k
}

// observe records one request's duration and outcome; it is deferred,
// so it takes the named error result by address.
func (s *Store) observe(op, key string, start time.Time, err *error) {
	if s.metrics == nil {
		return
	}
	var e error
	if err != nil {
		e = *err
	}
	s.metrics.observe(op, s.typeOf(key), time.Since(start), e)
}

// Get returns key's current value through a linearizable read.
func (s *Store) Get(ctx context.Context, key string) (kv storage.KV, err error) {
	defer s.observe("get", key, time.Now(), &err)
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return storage.KV{}, mapError(err, 0)
	}
	if len(resp.Kvs) == 0 {
		return storage.KV{}, fmt.Errorf("%w: %s", storage.ErrNotFound, key)
	}
	return toKV(resp.Kvs[0], resp.Kvs[0].ModRevision)
}

// CurrentRevision returns the revision of a linearizable read.
func (s *Store) CurrentRevision(ctx context.Context) (rev int64, err error) {
	defer s.observe("currentRevision", "", time.Now(), &err)
	// Any key will do: the header carries the store's revision.
	resp, err := s.cli.Get(ctx, compactRevKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, mapError(err, 0)
	}
	return resp.Header.Revision, nil
}

// toKV returns kv with its value's resourceVersion set to rev.
func toKV(kv *mvccpb.KeyValue, rev int64) (storage.KV, error) {
	v, err := storage.WithResourceVersion(kv.Value, rev)
	if err != nil {
		return storage.KV{}, fmt.Errorf("%w (key %s)", err, kv.Key)
	}
	return storage.KV{Key: string(kv.Key), Value: v, Revision: rev}, nil
}

// MaxValueBytes is the largest value the embedded member and the clients
// this package builds are set up to carry: the API server's body limit.
const MaxValueBytes = wire.MaxRequestBodyBytes

// mapError turns etcd's revision and size errors into storage's, and
// any other into a storage.BackendError; rev is the revision the request
// asked for.
func mapError(err error, rev int64) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		// etcd's range error does not say which revision is the oldest
		// kept; 0 means unknown.
		return &storage.CompactedError{Requested: rev}
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %d", storage.ErrFutureRevision, rev)
	case errors.Is(err, rpctypes.ErrRequestTooLarge), status.Code(err) == codes.ResourceExhausted:
		return fmt.Errorf("%w: %w", storage.ErrValueTooLarge, err)
	}
	return &storage.BackendError{Err: err}
}
