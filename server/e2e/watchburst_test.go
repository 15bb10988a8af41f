package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// TestWatchInitialEventsArriveWhole: the server writes a watch's initial
// events as one burst and flushes only at its end; the last event of the
// burst must still reach the client with no later write to push it out,
// for every way of asking for initial events, through the watch cache and
// straight from etcd.
func TestWatchInitialEventsArriveWhole(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := ourClient(t, s)
	cms := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")
	const n = 300
	for i := range n {
		if _, err := cms.Create(t.Context(), unstructuredCM(fmt.Sprintf("burst-%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	hc := httpsClient(t, s)
	for _, q := range []string{
		"watch=1&resourceVersion=0",
		"watch=1",
		"watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
		"watch=1&labelSelector=missing!=x&resourceVersion=0",
	} {
		t.Run(q, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", s.URL()+"/api/v1/namespaces/default/configmaps?"+q, nil)
			req.Header.Set("Authorization", "Bearer "+s.Credentials().AdminToken)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			lines := make(chan wire.Event[json.RawMessage])
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					var ev wire.Event[json.RawMessage]
					if json.Unmarshal(sc.Bytes(), &ev) == nil {
						lines <- ev
					}
				}
			}()
			adds := 0
			for adds < n {
				select {
				case ev, ok := <-lines:
					if !ok {
						t.Fatalf("stream ended after %d adds", adds)
					}
					if ev.Type == wire.Added {
						adds++
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("only %d of %d initial events arrived: the burst's tail was not flushed", adds, n)
				}
			}
			resp.Body.Close()
			for range lines {
			}
		})
	}
}
