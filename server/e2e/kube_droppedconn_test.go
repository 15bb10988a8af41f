package e2e

import (
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// dropFirstProxy forwards TCP connections to target, but resets the first
// one as soon as the client has written to it (its TLS ClientHello): the
// client's request fails before any answer, as when a loaded server drops
// a new connection (Go's HTTP/2 server closes one whose first SETTINGS it
// has not read within two seconds, its TLS listener one whose handshake
// outlasts the handshake timeout).
type dropFirstProxy struct {
	ln     net.Listener
	target string
	conns  atomic.Int64 // accepted so far
	wg     sync.WaitGroup

	mu   sync.Mutex // guards open
	open []net.Conn
}

func startDropFirstProxy(t *testing.T, target string) *dropFirstProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropFirstProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.open {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *dropFirstProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		n := p.conns.Add(1)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if n == 1 {
				_, _ = c.Read(make([]byte, 1))
				_ = c.(*net.TCPConn).SetLinger(0) // a reset, not a clean close
				_ = c.Close()
				return
			}
			p.forward(c)
		}()
	}
}

func (p *dropFirstProxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.open = append(p.open, c, s)
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		_ = dst.(*net.TCPConn).CloseWrite()
	}
	go pipe(s, c)
	go pipe(c, s)
	wg.Wait()
	_ = c.Close()
	_ = s.Close()
}

// TestKubeListRetriedAfterDroppedConnection: our client, with a
// Config.Timeout as most programs set, lists through a connection that
// fails before any answer, against kube-apiserver and listwatch serve side
// by side. A GET is retried a second later (client-go's rule) and the list
// comes back the same from both; before, the timeout's own context, ended
// by the failed attempt, made the failure look like the caller's and the
// LIST failed with the connection's error ("unexpected EOF" in the soak).
func TestKubeListRetriedAfterDroppedConnection(t *testing.T) {
	t.Parallel()
	eps, ns := transportEndpoints(t)
	cm := func(name string) *object.Unstructured {
		return &object.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"data":     map[string]any{"k": name},
		}}
	}
	cms := client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	got := map[string][]string{}
	for _, ep := range eps {
		direct := client.NewResource[*object.Unstructured](endpointClient(t, ep.kubeconfig, nil), cms).Namespace(ns)
		for _, name := range []string{"a", "b", "c"} {
			if _, err := direct.Create(t.Context(), cm(name)); err != nil {
				t.Fatalf("%s: create %s: %v", ep.name, name, err)
			}
		}
		var proxy *dropFirstProxy
		c := endpointClient(t, ep.kubeconfig, func(cfg *client.Config) {
			u, err := url.Parse(cfg.Host)
			if err != nil {
				t.Fatal(err)
			}
			proxy = startDropFirstProxy(t, u.Host)
			_, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
			u.Host = net.JoinHostPort(u.Hostname(), port)
			cfg.Host = u.String()
			cfg.Timeout = 30 * time.Second
		})
		l, err := client.NewResource[*object.Unstructured](c, cms).Namespace(ns).List(t.Context(), wire.ListOptions{Limit: 2})
		if err != nil {
			t.Fatalf("%s: LIST through a dropped connection: %v", ep.name, err)
		}
		if n := proxy.conns.Load(); n != 2 {
			t.Errorf("%s: %d connections, want the dropped one and its retry", ep.name, n)
		}
		var names []string
		for _, o := range l.Items {
			names = append(names, o.GetName())
		}
		if l.Metadata.Continue != "" {
			names = append(names, "<continue>")
		}
		got[ep.name] = names
	}
	if !slices.Equal(got["kube"], got["serve"]) || len(got["kube"]) != 3 {
		t.Errorf("pages differ: kube %q, serve %q", got["kube"], got["serve"])
	}
}
