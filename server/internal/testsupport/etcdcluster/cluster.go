// Package etcdcluster runs a multi-member etcd cluster on loopback ports as
// separate processes, so that tests can kill -9 one member and restart it
// on its data. The member binary is internal/testsupport/etcdmember
// (etcd's own main, built from the module listwatch depends on); Build
// compiles it.
//
// A Cluster is a set of child processes, not a long-lived component: tests
// start, kill and restart members step by step, and Close kills whatever is
// left. Nothing here runs a goroutine after a method returns, except the
// os/exec wait of each live member, which Kill and Close reap.
package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/listwatch/listwatch/server/internal/testsupport"
)

// ErrCluster wraps every failure to start, stop or reach a member.
var ErrCluster = errors.New("etcdcluster")

// Build compiles internal/testsupport/etcdmember into dir and returns the
// binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "etcd-member")
	cmd := testsupport.GoBuild(ctx, bin, "github.com/listwatch/listwatch/server/internal/testsupport/etcdmember")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: build etcd-member: %w\n%s", ErrCluster, err, out)
	}
	return bin, nil
}

// Cluster is n members with fixed loopback ports and data directories.
type Cluster struct {
	binary string
	token  string

	mu sync.Mutex
	// members[i].cmd is non-nil while member i runs. Guarded by mu.
	members []*member
}

type member struct {
	name, dir, clientURL, peerURL string
	cmd                           *exec.Cmd
	exited                        chan struct{}
}

// New assigns ports and directories under dir for n members. It starts
// nothing.
func New(binary, dir string, n int) (*Cluster, error) {
	c := &Cluster{binary: binary, token: fmt.Sprintf("lw-%d", time.Now().UnixNano())}
	for i := range n {
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		c.members = append(c.members, &member{
			name:      fmt.Sprintf("m%d", i),
			dir:       filepath.Join(dir, fmt.Sprintf("m%d", i)),
			clientURL: fmt.Sprintf("http://127.0.0.1:%d", cp),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", pp),
		})
	}
	return c, nil
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before the member binds it; the member then fails to start and
// the test reports it.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCluster, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.clientURL)
	}
	return out
}

// Size is the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// StartAll starts every member that is not running.
func (c *Cluster) StartAll() error {
	for i := range c.members {
		if err := c.Start(i); err != nil {
			return err
		}
	}
	return nil
}

// Start starts member i on its data directory (a restart keeps its data).
// Its output goes to <dir>.log.
func (c *Cluster) Start(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	if m.cmd != nil {
		return nil
	}
	var initial []string
	for _, o := range c.members {
		initial = append(initial, o.name+"="+o.peerURL)
	}
	logf, err := os.OpenFile(m.dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCluster, err)
	}
	defer logf.Close()
	cmd := exec.Command(c.binary,
		"--name", m.name,
		"--data-dir", m.dir,
		"--listen-client-urls", m.clientURL,
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", strings.Join(initial, ","),
		"--initial-cluster-state", "new",
		"--initial-cluster-token", c.token,
		"--watch-progress-notify-interval", "5s",
		"--log-level", "error",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: start %s: %w", ErrCluster, m.name, err)
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(cmd, m.exited)
	return nil
}

// Kill sends SIGKILL to member i and waits for it to exit.
func (c *Cluster) Kill(i int) error {
	c.mu.Lock()
	m := c.members[i]
	cmd, exited := m.cmd, m.exited
	m.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%w: kill %s: %w", ErrCluster, m.name, err)
	}
	<-exited
	return nil
}

// Close kills every running member.
func (c *Cluster) Close() error {
	var errs []error
	for i := range c.members {
		errs = append(errs, c.Kill(i))
	}
	return errors.Join(errs...)
}

// WaitHealthy polls until every running member answers a status request
// and the cluster has a leader, or ctx ends.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	for {
		err := c.healthy(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: not healthy: %w (last: %w)", ErrCluster, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) healthy(ctx context.Context) error {
	c.mu.Lock()
	var eps []string
	for _, m := range c.members {
		if m.cmd != nil {
			eps = append(eps, m.clientURL)
		}
	}
	c.mu.Unlock()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	for _, ep := range eps {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", ep, err)
		}
		if st.Leader == 0 {
			return fmt.Errorf("%s: no leader", ep)
		}
	}
	return nil
}

// Leader returns the index of the current leader.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCluster, err)
	}
	defer cli.Close()
	for i, m := range c.members {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, m.clientURL)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: no leader found", ErrCluster)
}
