//go:build !unix

package etcd

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked")

// tryLock does not lock where flock is missing: etcd's own database lock
// is then the only guard.
func tryLock(*os.File) error { return nil }
