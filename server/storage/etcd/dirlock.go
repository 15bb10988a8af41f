package etcd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrDataDirInUse: another member (in this process or another) runs on the
// directory. The error names the directory and, when it could be read, the
// other process's ID.
var ErrDataDirInUse = errors.New("etcd: data directory in use")

// LockFile is the file in EmbeddedConfig.Dir that a running member holds
// locked (flock) and that names its process ID.
const LockFile = "listwatch.lock"

// dirLock is an exclusive lock on a data directory, held from before etcd
// opens its database until after it has closed it. Without it a second
// member on the same directory blocks inside etcd on the database's own
// lock, for ever and deaf to its context.
type dirLock struct{ f *os.File }

// selfLockWait bounds how long lockDir waits for a lock that this
// process's file names as its holder (see lockDir).
const selfLockWait = 2 * time.Second

// selfLockPoll is how often lockDir tries such a lock again; lockRetried,
// set by tests, is called before each try again.
var (
	selfLockPoll = 10 * time.Millisecond
	lockRetried  func()
)

// lockDir takes the lock on dir, or returns ErrDataDirInUse. A lock that
// another process holds fails at once. One that this process held may
// still be held for a moment after it was released: a child this process
// is starting (another goroutine's exec) holds a copy of every open file
// from its fork until its exec closes them, and the flock with them. A
// server restarted in the same process on its data dir (a test's, say)
// could then find its own released lock still held; lockDir tries it
// again for up to selfLockWait.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: lock: %w", ErrEmbeddedStart, err)
	}
	deadline := time.Now().Add(selfLockWait)
	for {
		err := tryLock(f)
		if err == nil {
			break
		}
		holder, self := readHolder(f)
		if errors.Is(err, errLocked) && self && time.Now().Before(deadline) {
			if lockRetried != nil {
				lockRetried()
			}
			time.Sleep(selfLockPoll) // flock cannot wait with a deadline
			continue
		}
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("%w: %s, by %s (lock file %s)", ErrDataDirInUse, dir, holder, path)
		}
		return nil, fmt.Errorf("%w: lock %s: %w", ErrEmbeddedStart, path, err)
	}
	// The PID is only a hint for the error above; the lock is the flock,
	// which the kernel drops when this process ends, however it ends.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// readHolder describes the process that holds the lock, from the PID in
// its file, and tells whether that is this process.
func readHolder(f *os.File) (holder string, self bool) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if err != nil {
		return "another process", false
	}
	return holderOf(b, os.Getpid()), lockPID(b) == os.Getpid()
}

// lockPID is the PID a lock file holds, or 0 if it holds none.
func lockPID(b []byte) int {
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// holderOf describes the holder whose lock file holds b; self is this
// process's PID. Anything but a positive decimal PID is "another process".
func holderOf(b []byte, self int) string {
	switch pid := lockPID(b); {
	case pid <= 0:
		return "another process"
	case pid == self:
		return fmt.Sprintf("this process (pid %d)", pid)
	default:
		return fmt.Sprintf("process %d", pid)
	}
}

// unlock releases the lock; the file stays, so that a process waiting to
// open it never races with its removal.
func (l *dirLock) unlock() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// LockDir takes the same exclusive lock on dir for a caller that owns the
// directory around the member (the server's data dir, holding its
// credentials and kubeconfig as well as the member's directory), so that a
// second server on it fails before it touches anything. The lock holds
// until unlock is called or the process ends.
func LockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: lock: %w", ErrEmbeddedStart, err)
	}
	l, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	return l.unlock, nil
}
