package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// TestReplayServer: recording, the replay server passes a list and a
// watch-list through to a real server and keeps them; replaying, it
// answers the same requests (the watch with another timeoutSeconds)
// with the same bytes without the server, holds the watch open until the
// client leaves, passes a request it never saw to the server, counting
// it, and answers a watch without initial events it never saw as a quiet
// one.
func TestReplayServer(t *testing.T) {
	kubeconfig := startServer(t)
	real, err := client.LoadKubeconfig(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rc, err := client.New(real)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.CloseIdleConnections()
	for _, name := range []string{"a", "b"} {
		body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`)
		resp, err := rc.Do(ctx, http.MethodPost, "/api/v1/namespaces/default/configmaps", nil, body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	rs, err := newReplayServer(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	cfg, err := client.LoadKubeconfig(rs.kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()

	const list = "/api/v1/namespaces/default/configmaps"
	watchQuery := func(timeout string) url.Values {
		return url.Values{"watch": {"1"}, "sendInitialEvents": {"true"}, "resourceVersionMatch": {"NotOlderThan"},
			"allowWatchBookmarks": {"true"}, "timeoutSeconds": {timeout}}
	}
	get := func(q url.Values) []byte {
		t.Helper()
		resp, err := c.Do(ctx, http.MethodGet, list, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// watchList reads a watch-list up to its initial-events-end bookmark,
	// then reads once more after its context has ended: an error of the
	// ended context says the stream was still open, io.EOF that it had
	// ended.
	watchList := func(timeout string) ([]byte, error) {
		t.Helper()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, err := c.Do(wctx, http.MethodGet, list, watchQuery(timeout), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got bytes.Buffer
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadBytes('\n')
			got.Write(line)
			if err != nil {
				t.Fatalf("watch ended before its initial events did: %v\n%s", err, got.Bytes())
			}
			if bytes.Contains(line, []byte(`"BOOKMARK"`)) && bytes.Contains(line, []byte(wire.AnnotationInitialEventsEnd)) {
				break
			}
		}
		cancel()
		_, err = r.ReadByte()
		return got.Bytes(), err
	}

	recordedList := get(url.Values{})
	recordedWatch, _ := watchList("30")
	if !bytes.Contains(recordedList, []byte(`"name":"b"`)) || bytes.Count(recordedWatch, []byte(`"ADDED"`)) != 2 {
		t.Fatalf("recorded list or watch lacks the objects:\n%s\n%s", recordedList, recordedWatch)
	}
	rs.Replay()

	// The real server changes; the replay does not.
	resp, err := rc.Do(ctx, http.MethodDelete, list+"/a", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := get(url.Values{}); !bytes.Equal(got, recordedList) {
		t.Errorf("replayed list differs:\n%s\nrecorded:\n%s", got, recordedList)
	}
	got, err := watchList("47")
	if !bytes.Equal(got, recordedWatch) {
		t.Errorf("replayed watch differs:\n%s\nrecorded:\n%s", got, recordedWatch)
	}
	if errors.Is(err, io.EOF) {
		t.Error("the replayed watch ended by itself; a watch must stay open until its client leaves")
	}
	if n := rs.Misses(); n != 0 {
		t.Errorf("%d misses for recorded requests", n)
	}
	// Not recorded: the real server answers, without "a".
	if got := get(url.Values{"limit": {"10"}}); bytes.Contains(got, []byte(`"name":"a"`)) || !bytes.Contains(got, []byte(`"name":"b"`)) {
		t.Errorf("an unrecorded list is not the real server's:\n%s", got)
	}
	if n := rs.Misses(); n != 1 {
		t.Errorf("misses = %d, want 1", n)
	}
	// Not recorded, a watch without initial events: a quiet watch, not
	// the real server's (which would send the deletion of "a").
	wctx, cancel := context.WithCancel(ctx)
	resp, err = c.Do(wctx, http.MethodGet, list, url.Values{"watch": {"1"}, "resourceVersion": {"1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if b, err := io.ReadAll(resp.Body); len(b) != 0 || errors.Is(err, io.EOF) || err == nil {
		t.Errorf("quiet watch: read %q, %v", b, err)
	}
	resp.Body.Close()
	if n := rs.Misses(); n != 1 {
		t.Errorf("misses = %d after a quiet watch, want 1", n)
	}
}

// TestRunInformerReplay: with Replay, each implementation also syncs
// against a replay of what the server sent it, every request of it
// answered from the recording.
func TestRunInformerReplay(t *testing.T) {
	kubeconfig := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Target:    TargetOptions{Kubeconfig: kubeconfig},
		Namespace: "bench-replay",
		Objects:   []int{30},
		Informer: &InformerOptions{
			Impls:        []string{ImplListwatchTyped, ImplClientGoTyped, ImplClientGoTypedPaged},
			Updates:      -1,
			Replay:       true,
			ChildCommand: []string{os.Args[0]},
			ChildEnv:     []string{childEnv + "=1"},
			ChildTimeout: 2 * time.Minute,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, run := range res.Informer.Runs {
		names = append(names, run.Impl)
		if strings.HasSuffix(run.Impl, ReplaySuffix) && (run.Listed != 30 || run.ReplayMisses != 0 || run.SyncMs <= 0) {
			t.Errorf("%s: listed %d, %d misses, sync %.1f ms", run.Impl, run.Listed, run.ReplayMisses, run.SyncMs)
		}
	}
	want := "listwatch-typed listwatch-typed@replay client-go-typed client-go-typed@replay client-go-typed-paged client-go-typed-paged@replay"
	if strings.Join(names, " ") != want {
		t.Errorf("runs %s, want %s", strings.Join(names, " "), want)
	}
}
