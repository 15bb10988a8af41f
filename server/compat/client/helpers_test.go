package client_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

var (
	configMaps = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	pods       = client.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// startTLS serves h on 127.0.0.1 over TLS with HTTP/2 offered, and closes
// the server when the test ends.
func startTLS(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// caPEM is the PEM of the server's self-signed certificate.
func caPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// newTestClient builds a Client for srv trusting its certificate; mutate
// adjusts the Config first. Rate limiting is off unless mutate sets QPS.
func newTestClient(t testing.TB, srv *httptest.Server, mutate func(*client.Config)) *client.Client {
	t.Helper()
	cfg := &client.Config{Host: srv.URL, CAData: caPEM(srv), QPS: -1}
	if mutate != nil {
		mutate(cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// ctxT is a context that ends with the test, bounded so a hang fails.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// statusOf finds the *wire.Status in err's chain.
func statusOf(err error) (*wire.Status, bool) {
	var st *wire.Status
	ok := errors.As(err, &st)
	return st, ok
}

// seenRequest is a request a fake server received.
type seenRequest struct {
	method, path string
	query        url.Values
	header       http.Header
	body         []byte
}

const benchItems = 500

// benchPod is a pod of realistic size (labels, annotations, a container
// with env and resources, status).
func benchPod(i int) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%04d", i), Namespace: "bench", ResourceVersion: fmt.Sprint(1000 + i),
			UID: "0b5e3c7e-6d4f-4c1a-9a0e-000000000000", Labels: map[string]string{"app": "bench", "tier": "web", "pod-template-hash": "5d8f7c9b6"},
			Annotations: map[string]string{"kubernetes.io/config.seen": "2026-01-01T00:00:00Z"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:v1.2.3", Args: []string{"--port=8080", "--verbose"},
			Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", HostIP: "192.168.0.1"},
	}
}

// memTransport answers every request from memory, without a network: a
// list with list (of Content-Type listType), a watch with watch (of
// watchType). It lets a benchmark time the client's own decoding.
type memTransport struct {
	listType, watchType string
	list, watch         []byte
}

func (m *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ct, body := m.listType, m.list
	if req.URL.Query().Get("watch") == "true" {
		ct, body = m.watchType, m.watch
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// memClient is a Client whose requests m answers.
func memClient(t testing.TB, m *memTransport) *client.Client {
	t.Helper()
	c, err := client.New(&client.Config{Host: "https://in-memory.invalid", QPS: -1,
		WrapTransport: func(http.RoundTripper) http.RoundTripper { return m }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// isProtobuf says whether a Content-Type is protobuf's.
func isProtobuf(ct string) bool { return strings.HasPrefix(ct, wire.ContentTypeProtobuf) }
