package bench

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/listwatch/listwatch/server/request"
)

// replayServer stands for a server that does nothing but write: it
// answers an informer with the bytes the real server sent the same
// informer before, so what an informer takes against it is about the
// client's own cost (the replay's TLS and HTTP/2 server cost something
// too, in the bench's process).
//
// It works in two phases. Recording, it is a proxy to the real server
// (with the target's credentials) that keeps every response it passes:
// status, the headers that shape the body, and the body as sent (gzip
// stays gzip). Replaying, it answers each request it recorded with those
// bytes, written as fast as the connection takes them; a watch is then
// held open, as a quiet watch is, until the client leaves. A request it
// did not record is passed to the real server and counted (Misses), but
// for a watch without initial events, which is answered as a quiet watch.
//
// Requests are matched on method, path, query and the Accept and
// Accept-Encoding headers; timeoutSeconds and timeout are left out of
// the query, as client-go's reflector picks them at random per watch.
type replayServer struct {
	srv      *httptest.Server
	upstream http.RoundTripper
	base     *url.URL // the real server's URL

	mu        sync.Mutex
	replaying bool
	recorded  map[string]*recording
	inflight  sync.WaitGroup
	misses    atomic.Int64

	kubeconfig string // for the children; in dir
	dir        string
}

// recording is one response as the real server sent it.
type recording struct {
	status int
	header http.Header
	body   []byte
}

// replayedHeaders are the response headers a recording keeps.
var replayedHeaders = []string{"Content-Type", "Content-Encoding", "Audit-Id", "Cache-Control", "Warning",
	"X-Kubernetes-Pf-Flowschema-Uid", "X-Kubernetes-Pf-Prioritylevel-Uid"}

// newReplayServer starts a recording proxy to the server kubeconfig and
// kubeContext name, on 127.0.0.1 with HTTP/2 and a certificate of its
// own, and writes a kubeconfig for it. Close stops it.
func newReplayServer(kubeconfig, kubeContext string) (*replayServer, error) {
	loading := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("bench: replay: %w", err)
	}
	// The children's Accept-Encoding goes upstream as they sent it, and
	// the body comes back as the server sent it.
	rc.DisableCompression = true
	up, err := rest.TransportFor(rc)
	if err != nil {
		return nil, fmt.Errorf("bench: replay: %w", err)
	}
	base, err := url.Parse(rc.Host)
	if err != nil {
		return nil, fmt.Errorf("bench: replay: %w", err)
	}
	r := &replayServer{upstream: up, base: base, recorded: map[string]*recording{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.EnableHTTP2 = true
	r.srv.StartTLS()
	if r.dir, err = os.MkdirTemp("", "listwatch-bench-replay-"); err != nil {
		r.srv.Close()
		return nil, err
	}
	if err := r.writeKubeconfig(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// writeKubeconfig writes the children's kubeconfig: the replay server's
// address and CA, and a token it does not check.
func (r *replayServer) writeKubeconfig() error {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["replay"] = &clientcmdapi.Cluster{Server: r.srv.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["replay"] = &clientcmdapi.AuthInfo{Token: "replay"}
	cfg.Contexts["replay"] = &clientcmdapi.Context{Cluster: "replay", AuthInfo: "replay"}
	cfg.CurrentContext = "replay"
	r.kubeconfig = filepath.Join(r.dir, "kubeconfig")
	return clientcmd.WriteToFile(*cfg, r.kubeconfig)
}

// Replay ends the recording: it waits for the requests in flight (a
// recorded watch ends when its client leaves) and from then on answers
// from what was recorded.
func (r *replayServer) Replay() {
	// Set first: a request that starts from now on is replayed and is
	// not waited for, so no Add can race the Wait.
	r.mu.Lock()
	r.replaying = true
	r.mu.Unlock()
	r.inflight.Wait()
}

// Misses is how many requests were replayed from the real server because
// nothing recorded matched them.
func (r *replayServer) Misses() int64 { return r.misses.Load() }

// Close stops the server and removes its kubeconfig.
func (r *replayServer) Close() {
	r.srv.CloseClientConnections()
	r.srv.Close()
	_ = os.RemoveAll(r.dir)
}

// replayKey is what two requests must share to get the same answer.
func replayKey(req *http.Request) string {
	q := req.URL.Query()
	q.Del("timeoutSeconds")
	q.Del("timeout")
	return strings.Join([]string{req.Method, req.URL.Path, q.Encode(),
		req.Header.Get("Accept"), req.Header.Get("Accept-Encoding")}, "\n")
}

func (r *replayServer) serve(w http.ResponseWriter, req *http.Request) {
	key := replayKey(req)
	q := req.URL.Query()
	watch := request.IsWatch(q)
	r.mu.Lock()
	replaying, rec := r.replaying, r.recorded[key]
	if !replaying {
		r.inflight.Add(1)
		defer r.inflight.Done()
	}
	r.mu.Unlock()
	if replaying && rec != nil {
		h := w.Header()
		for k, v := range rec.header {
			h[k] = v
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body)
		if watch {
			_ = http.NewResponseController(w).Flush()
			<-req.Context().Done()
		}
		return
	}
	if replaying && watch && q.Get("sendInitialEvents") != "true" {
		// A watch from a list's resourceVersion that the recording
		// child had not yet started when it left (it leaves once
		// synced): with nothing written since (replay runs have no
		// update burst), the real server's would be as quiet.
		ct := "application/json"
		if strings.Contains(req.Header.Get("Accept"), "protobuf") {
			ct = "application/vnd.kubernetes.protobuf;stream=watch"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		<-req.Context().Done()
		return
	}
	if replaying {
		r.misses.Add(1)
	}
	got, err := r.pass(w, req, watch)
	// Only a whole 2xx answer is kept, and the first: a retried request's
	// error (a 429, a 5xx) would otherwise be replayed for good.
	if err != nil || replaying || got.status/100 != 2 {
		return
	}
	r.mu.Lock()
	if r.recorded[key] == nil {
		r.recorded[key] = got
	}
	r.mu.Unlock()
}

// pass sends req to the real server and copies its answer to w as it
// arrives (a watch's events as they come), returning the answer whole.
// An error is a failed round trip, or an answer other than a watch's
// (which ends when its client leaves; watch says req is one) that did not
// reach its end, read or written.
func (r *replayServer) pass(w http.ResponseWriter, req *http.Request, watch bool) (*recording, error) {
	u := *r.base
	u.Path = strings.TrimSuffix(r.base.Path, "/") + req.URL.Path
	u.RawQuery = req.URL.RawQuery
	var body io.Reader
	if req.Body != nil && req.Body != http.NoBody {
		body = req.Body
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, u.String(), body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return nil, err
	}
	for _, k := range []string{"Accept", "Accept-Encoding", "Content-Type", "User-Agent"} {
		if v := req.Header.Get(k); v != "" {
			out.Header.Set(k, v)
		}
	}
	resp, err := r.upstream.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return nil, err
	}
	defer resp.Body.Close()
	rec := &recording{status: resp.StatusCode, header: http.Header{}}
	for _, k := range replayedHeaders {
		if v, ok := resp.Header[k]; ok {
			rec.header[k] = v
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	var kept bytes.Buffer
	fl := http.NewResponseController(w)
	buf := make([]byte, 64<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			kept.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				if !watch {
					return nil, werr
				}
				break
			}
			_ = fl.Flush()
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) && !watch {
				return nil, rerr
			}
			break
		}
	}
	rec.body = kept.Bytes()
	return rec, nil
}
