package etcd_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/server/storage/etcd"
)

// refused asserts that a client with cfg can neither read nor write.
// Refusals surface as timeouts (the client retries the handshake), so the
// deadline is short and the cases run in parallel.
func refused(t *testing.T, cfg etcd.Config) {
	t.Parallel()
	cfg.DialTimeout = time.Second
	cli, err := etcd.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if _, err := cli.Txn(ctx).Then(
		clientv3.OpGet("/registry/", clientv3.WithPrefix()),
		clientv3.OpPut("/registry/secrets/default/x", "x"),
	).Commit(); err == nil {
		t.Error("read and wrote the store")
	}
}

// TestEmbeddedRefusesOtherClients: only the member's own client gets in.
// A client without a certificate, over plaintext or TLS, and one with a
// certificate from another CA are refused; the etcd HTTP endpoints on the
// client port are closed to them too.
func TestEmbeddedRefusesOtherClients(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, etcd.EmbeddedConfig{Dir: t.TempDir()})
	own := e.ClientConfig()
	for _, ep := range e.Endpoints() {
		if !strings.HasPrefix(ep, "https://127.0.0.1:") {
			t.Fatalf("endpoint %q, want https on loopback", ep)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Client().Put(ctx, "/registry/secrets/default/s", "v"); err != nil {
		t.Fatalf("own client: %v", err)
	}

	plain := make([]string, len(own.Endpoints))
	for i, ep := range own.Endpoints {
		plain[i] = "http://" + strings.TrimPrefix(ep, "https://")
	}
	other := writeCerts(t)
	t.Run("refused", func(t *testing.T) {
		t.Run("plaintext", func(t *testing.T) { refused(t, etcd.Config{Endpoints: plain}) })
		t.Run("TLS without a certificate", func(t *testing.T) {
			refused(t, etcd.Config{Endpoints: own.Endpoints, CAFile: own.CAFile})
		})
		t.Run("certificate of another CA", func(t *testing.T) {
			refused(t, etcd.Config{Endpoints: own.Endpoints, CAFile: own.CAFile,
				CertFile: other.clientCert, KeyFile: other.clientKey})
		})
	})

	// etcd's HTTP handlers share the port.
	for _, c := range []struct {
		name string
		url  string
		tls  *tls.Config
	}{
		{"plaintext /version", plain[0] + "/version", nil},
		{"TLS /version", own.Endpoints[0] + "/version", &tls.Config{InsecureSkipVerify: true}},
		{"TLS /metrics", own.Endpoints[0] + "/metrics", &tls.Config{InsecureSkipVerify: true}},
	} {
		if body, err := httpGet(c.url, c.tls); err == nil && strings.Contains(body, "etcd") {
			t.Errorf("%s answered: %.100s", c.name, body)
		}
	}

	// A second client with the member's own files works: the refusals
	// above are about the credentials, not the address.
	again, err := etcd.NewClient(own)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if r, err := again.Get(ctx, "/registry/secrets/default/s"); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("client with the member's files: %v, %v", r, err)
	}
}

// TestEmbeddedFileModes: the data directory and the PKI directory are
// 0700, even when Dir existed with a looser mode; keys and the lock file
// are 0600.
func TestEmbeddedFileModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	startEmbedded(t, etcd.EmbeddedConfig{Dir: dir})
	pkiDir := filepath.Join(dir, etcd.PKIDir)
	want := map[string]os.FileMode{
		dir:                                 0o700 | os.ModeDir,
		pkiDir:                              0o700 | os.ModeDir,
		filepath.Join(dir, etcd.LockFile):   0o600,
		filepath.Join(pkiDir, "ca.key"):     0o600,
		filepath.Join(pkiDir, "server.key"): 0o600,
		filepath.Join(pkiDir, "client.key"): 0o600,
		filepath.Join(pkiDir, "ca.crt"):     0o644,
		filepath.Join(pkiDir, "server.crt"): 0o644,
		filepath.Join(pkiDir, "client.crt"): 0o644,
		filepath.Join(dir, "member"):        0o700 | os.ModeDir,
	}
	for path, m := range want {
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := st.Mode() & (os.ModeDir | os.ModePerm); got != m {
			t.Errorf("%s: mode %v, want %v", path, got, m)
		}
	}
}

// TestEmbeddedRestartReusesCertificates: a restart on the same directory
// loads the CA and certificates instead of issuing new ones.
func TestEmbeddedRestartReusesCertificates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	read := func() map[string][]byte {
		files := map[string][]byte{}
		for _, f := range []string{"ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key"} {
			b, err := os.ReadFile(filepath.Join(dir, etcd.PKIDir, f))
			if err != nil {
				t.Fatal(err)
			}
			files[f] = b
		}
		return files
	}
	e := startEmbedded(t, etcd.EmbeddedConfig{Dir: dir})
	before := read()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := startEmbedded(t, etcd.EmbeddedConfig{Dir: dir})
	for f, b := range read() {
		if !bytes.Equal(b, before[f]) {
			t.Errorf("%s changed across a restart", f)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e2.Client().Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddedDirInUse: a second member on a directory in use fails at
// once, naming the directory and the process, and the directory is free
// again after Close.
func TestEmbeddedDirInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := startEmbedded(t, etcd.EmbeddedConfig{Dir: dir})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		e   *etcd.Embedded
		err error
	}
	done := make(chan result, 1)
	go func() {
		e2, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: dir})
		done <- result{e2, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("second StartEmbedded on the same directory still blocked after 5s")
	}
	if r.e != nil {
		r.e.Close()
	}
	if !errors.Is(r.err, etcd.ErrDataDirInUse) {
		t.Fatalf("second StartEmbedded: %v, want ErrDataDirInUse", r.err)
	}
	for _, want := range []string{dir, fmt.Sprintf("pid %d", os.Getpid())} {
		if !strings.Contains(r.err.Error(), want) {
			t.Errorf("error %q does not name %q", r.err, want)
		}
	}

	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	startEmbedded(t, etcd.EmbeddedConfig{Dir: dir})
}

func httpGet(url string, tc *tls.Config) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("status %d", resp.StatusCode)
	}
	return string(b), err
}
