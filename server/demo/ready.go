package demo

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/listwatch/listwatch/client"
)

// WaitReady polls the server's /readyz until it answers 200 or ctx ends.
// A server may accept connections before it is ready (listwatch serve
// creates the default namespaces after it starts listening, as
// kube-apiserver does), so the demo, like any careful client of a fresh
// server, waits for /readyz before writing.
func WaitReady(ctx context.Context, c *client.Client) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := c.Do(ctx, http.MethodGet, "/readyz", nil, nil)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: server not ready: %w (last: %w)", context.Cause(ctx), err)
		case <-tick.C:
		}
	}
}
