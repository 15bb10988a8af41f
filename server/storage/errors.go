package storage

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("storage: key not found")
	// ErrExists: Create found the key already there.
	ErrExists = errors.New("storage: key already exists")
	// ErrConflict: the key's revision is not the one the write expected.
	ErrConflict = errors.New("storage: revision precondition failed")
	// ErrCompacted: the requested revision is older than the history kept.
	// Match it with errors.Is; errors.As a *CompactedError for the numbers.
	ErrCompacted = errors.New("storage: revision compacted")
	// ErrFutureRevision: the requested revision is newer than the store's.
	ErrFutureRevision = errors.New("storage: revision is in the future")
	// ErrInvalidStartKey: a StartKey outside the listed prefix.
	ErrInvalidStartKey = errors.New("storage: start key outside prefix")
	// ErrWatchClosed: Next was called on a closed watcher.
	ErrWatchClosed = errors.New("storage: watch closed")
	// ErrValueTooLarge: the store refused a value for its size (413).
	ErrValueTooLarge = errors.New("storage: value too large")
	// ErrInvalidValue: a value is not a JSON object with a metadata object.
	ErrInvalidValue = errors.New("storage: value is not a JSON object with metadata")
)

// CompactedError says which revision was asked for and which is the
// oldest still available.
type CompactedError struct {
	Requested int64
	Compacted int64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("storage: revision %d compacted (oldest available %d)", e.Requested, e.Compacted)
}

// Is makes errors.Is(err, ErrCompacted) true.
func (e *CompactedError) Is(target error) bool { return target == ErrCompacted }

// BackendError is an error of the store's backend (etcd) that no
// storage error stands for: a request that timed out, a leader that
// changed, a member out of space. kube-apiserver passes such an error up
// as it is, and answers it as a 500 whose message is its text (see
// server's storageError); Err is that error.
type BackendError struct {
	Err error
}

func (e *BackendError) Error() string { return "etcd: " + e.Err.Error() }

func (e *BackendError) Unwrap() error { return e.Err }
