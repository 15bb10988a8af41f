//go:build unix

package filters

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/wire"
)

// TestBodyLimitAnswersAClientStillWriting: an HTTP/1.1 client that does
// not wait for 100-continue (Python's requests) writes its whole body,
// then reads the answer; if the server closes the connection while it is
// still writing, the write fails and such a client never reads the 413.
// The client's send buffer is made small (64 KiB) so that what the kernel
// takes without the server reading is far below the limit, whatever the
// host's buffer sizes.
//
// The bodies leave less than net/http discards after the handler (256
// KiB) beyond the limit, then more, then twice the limit in all. Past
// 256 KiB net/http closes the connection after the answer, and whether
// the client's write finishes first depends on how much the kernel's
// buffers take in net/http's 500 ms before it closes — under load, not
// always (a CI run failed so). serve reads such bodies whole (up to twice
// the limit), so each answer comes on a connection kept open.
func TestBodyLimitAnswersAClientStillWriting(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, extra := range []int{100 << 10, 400 << 10, DefaultMaxBodyBytes} {
		t.Run(fmt.Sprint(extra), func(t *testing.T) {
			resp := e.writeThenRead(t, DefaultMaxBodyBytes+extra)
			defer resp.Body.Close()
			wantStatus(t, resp, http.StatusRequestEntityTooLarge, wire.ReasonRequestEntityTooLarge,
				"Request entity too large: limit is 3145728")
			if resp.Close {
				t.Error("the connection is closed after the answer; the body was not read whole")
			}
		})
	}
}

// TestBodyLimitAnswersExpectContinueWithoutTheBody: a client that sends
// Expect: 100-continue with a length over the limit gets the 413 first,
// with no 100 Continue asking for a body it would send for nothing.
func TestBodyLimitAnswersExpectContinueWithoutTheBody(t *testing.T) {
	e := newEnv(t, envConfig{})
	conn := e.dialHTTP1(t)
	head := fmt.Sprintf("POST /api/v1/namespaces/default/configmaps?dryRun=All HTTP/1.1\r\nHost: 127.0.0.1\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", DefaultMaxBodyBytes+1)
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	wantStatus(t, resp, http.StatusRequestEntityTooLarge, wire.ReasonRequestEntityTooLarge,
		"Request entity too large: limit is 3145728")
}

// writeThenRead POSTs a body of n bytes over a new TLS connection whose
// send buffer is 64 KiB, writing all of it before reading the response.
// A failed write is an error of the test; the response is read anyway.
func (e *env) writeThenRead(t *testing.T, n int) *http.Response {
	t.Helper()
	conn := e.dialHTTP1(t)
	req, err := http.NewRequest(http.MethodPost, "https://127.0.0.1/api/v1/namespaces/default/configmaps?dryRun=All",
		bytes.NewReader(bytes.Repeat([]byte("x"), n)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(conn); err != nil {
		t.Errorf("the connection broke before the body was written: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp
}

// dialHTTP1 opens a TLS connection to the server as the admin, speaking
// HTTP/1.1, with a 64 KiB send buffer; it is closed when the test ends,
// and fails the test's reads and writes after 30 s.
func (e *env) dialHTTP1(t *testing.T) *tls.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 64<<10)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	raw, err := d.DialContext(t.Context(), "tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn := tls.Client(raw, &tls.Config{RootCAs: e.srv.TLS.ClientCAs, ServerName: "127.0.0.1",
		Certificates: []tls.Certificate{e.adminCert(t)}, NextProtos: []string{"http/1.1"}})
	t.Cleanup(func() { conn.Close() })
	// Bounds a test that would otherwise hang on a server that neither
	// reads nor closes.
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return conn
}
