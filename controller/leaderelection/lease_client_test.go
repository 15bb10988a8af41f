package leaderelection

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// leaseServer serves the leases of namespace "ns" over real HTTP from a
// memoryLeases, answering errors with Status documents.
func leaseServer(t *testing.T, store *memoryLeases) *httptest.Server {
	const prefix = "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, prefix), "/")
		var (
			out *Lease
			err error
		)
		switch r.Method {
		case http.MethodGet:
			out, err = store.Get(r.Context(), name)
		case http.MethodPost, http.MethodPut:
			var in Lease
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if r.Method == http.MethodPost {
				out, err = store.Create(r.Context(), &in)
			} else {
				out, err = store.Update(r.Context(), &in)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if st, ok := err.(*wire.Status); ok {
			w.WriteHeader(int(st.Code))
			_ = json.NewEncoder(w).Encode(st)
			return
		}
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestElectionOverHTTPClient(t *testing.T) {
	store := newMemoryLeases()
	srv := leaseServer(t, store)
	cfg, err := client.ConfigFromURL(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	leases := NewLeaseClient(client.NewResource[*Lease](c, LeasesGVR).Namespace("ns"))

	ctx := t.Context()
	if _, err := leases.Get(ctx, "missing"); wire.ReasonOf(err) != wire.ReasonNotFound {
		t.Fatalf("Get missing: %v, want NotFound", err)
	}

	e, err := New(Config{Client: leases, Namespace: "ns", Name: "lock", Identity: "a",
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
		ReleaseOnCancel: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	led := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- e.Run(runCtx, Callbacks{OnStartedLeading: func(ctx context.Context) {
			close(led)
			<-ctx.Done()
		}})
	}()
	select {
	case <-led:
	case <-time.After(10 * time.Second):
		t.Fatal("never became leader over HTTP")
	}
	held, err := leases.Get(ctx, "lock")
	if err != nil || held.Spec.HolderIdentity != "a" || held.APIVersion != APIVersion || held.Kind != Kind {
		t.Fatalf("lease = %+v, %v", held, err)
	}

	// A stale resourceVersion is a Conflict through the real client.
	stale := *held
	stale.Metadata.ResourceVersion = "999999" // never issued
	if _, err := leases.Update(ctx, &stale); wire.ReasonOf(err) != wire.ReasonConflict {
		t.Fatalf("stale Update: %v, want Conflict", err)
	}

	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run = %v", err)
	}
	released, err := leases.Get(ctx, "lock")
	if err != nil || released.Spec.HolderIdentity != "" || released.Spec.LeaseDurationSeconds != 1 {
		t.Fatalf("lease after release = %+v, %v", released, err)
	}
}
