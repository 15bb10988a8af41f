package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// panicReader's watches panic on their second event, after the server
// has written and flushed the first.
type panicReader struct{ storage.ListWatcher }

func (r panicReader) WatchList(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.EventStream, error) {
	s, err := r.ListWatcher.WatchList(ctx, prefix, opts)
	if err != nil {
		return nil, err
	}
	return &panicStream{EventStream: s}, nil
}

type panicStream struct {
	storage.EventStream
	n atomic.Int32
}

func (s *panicStream) Next(ctx context.Context) (storage.WatchEvent, error) {
	if s.n.Add(1) > 1 {
		panic("boom mid-watch")
	}
	return s.EventStream.Next(ctx)
}

// TestPanicAfterBodyBeganAborts: a handler that panics once its response
// has begun must not get a Status appended to the partial body (which
// would read as a valid, complete response); the connection is cut.
func TestPanicAfterBodyBeganAborts(t *testing.T) {
	et := etcdtest.Start(t)
	e := startEnv(t, et.Store, et, func(c *Config) { c.Reader = panicReader{direct.New(et.Store)} })
	e.must(201, "POST", "/api/v1/namespaces/default/configmaps", cm("a", nil, nil))

	resp, err := http.Get(e.url + "/api/v1/namespaces/default/configmaps?watch=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.Contains(first, `"ADDED"`) {
		t.Fatalf("first event %q, %v", first, err)
	}
	rest, err := io.ReadAll(br)
	if strings.Contains(string(rest), `"Status"`) {
		t.Errorf("a Status was appended to the started watch: %s", rest)
	}
	if err == nil {
		t.Error("a watch cut by a panic read as cleanly ended")
	}
}
