package client

import (
	"bytes"
	"context"
	"crypto/x509"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// caReloadPeriod is how long a CA file's content is trusted before the
// file is read again: client-go's caRefreshDuration.
const caReloadPeriod = 5 * time.Minute

// baseTransport is the RoundTripper under the Client's authentication
// (and under Config.WrapTransport): an *http.Transport, or a caRotation
// around one.
type baseTransport interface {
	http.RoundTripper
	CloseIdleConnections()
}

var (
	_ baseTransport = (*http.Transport)(nil)
	_ baseTransport = (*caRotation)(nil)
)

// caRotation is client-go's atomicTransportHolder: the base transport of
// a Client that trusts a CA file. On a request, at most once every
// caReloadPeriod of the Client's clock, it reads the file; when the
// content changed and parses, later requests go through a clone of the
// transport whose only difference is the new root pool (same TLS
// settings, so the same hostname, SNI and chain checks), and the old
// transport's idle connections are closed. Connections open at that
// moment, such as watches, keep the old trust until they end.
type caRotation struct {
	file  string
	clock clock
	log   *slog.Logger

	mu        sync.RWMutex    // guards the fields below
	current   *http.Transport // carries every new request
	previous  *http.Transport // the one current replaced, nil before; its busy connections go idle there
	data      []byte          // the CA file content current trusts
	checkedAt time.Time       // when the file was last read (or New read it)
}

func newCARotation(file string, data []byte, tr *http.Transport, clk clock, log *slog.Logger) *caRotation {
	return &caRotation{file: file, clock: clk, log: log, current: tr, data: data, checkedAt: clk.Now()}
}

func (r *caRotation) RoundTrip(req *http.Request) (*http.Response, error) {
	return r.transport(req.Context()).RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the current
// transport and of the one it replaced.
func (r *caRotation) CloseIdleConnections() {
	r.mu.RLock()
	cur, prev := r.current, r.previous
	r.mu.RUnlock()
	cur.CloseIdleConnections()
	if prev != nil {
		prev.CloseIdleConnections()
	}
}

func (r *caRotation) transport(ctx context.Context) *http.Transport {
	r.mu.RLock()
	cur, fresh := r.current, r.clock.Now().Sub(r.checkedAt) < caReloadPeriod
	r.mu.RUnlock()
	if fresh {
		return cur
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloadLocked(ctx)
	return r.current
}

// reloadLocked reads the CA file if caReloadPeriod has passed since the
// last read, and swaps in a transport trusting its content if that
// changed. A file that cannot be read, is empty or holds no certificate
// keeps the trust as it is (the file may be mid-rotation); it is read
// again after another period.
func (r *caRotation) reloadLocked(ctx context.Context) {
	now := r.clock.Now()
	if now.Sub(r.checkedAt) < caReloadPeriod {
		return
	}
	r.checkedAt = now
	data, err := os.ReadFile(r.file)
	switch {
	case err != nil:
		r.log.WarnContext(ctx, "reading the CA file failed; keeping the CA", "file", r.file, "error", err)
		return
	case len(data) == 0:
		r.log.WarnContext(ctx, "the CA file is empty; keeping the CA", "file", r.file)
		return
	case bytes.Equal(data, r.data):
		return
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		r.log.WarnContext(ctx, "the CA file holds no PEM certificate; keeping the CA", "file", r.file)
		return
	}
	next := r.current.Clone()
	next.TLSClientConfig.RootCAs = pool
	if r.previous != nil {
		r.previous.CloseIdleConnections()
	}
	r.previous, r.current, r.data = r.current, next, data
	r.previous.CloseIdleConnections()
	r.log.DebugContext(ctx, "the CA file changed; new connections trust it", "file", r.file)
}
