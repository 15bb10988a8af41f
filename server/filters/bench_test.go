package filters

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
)

// BenchmarkChain measures what the whole filter chain adds to a request
// (in-process, no network): bare handler vs. every filter with a token.
func BenchmarkChain(b *testing.B) {
	tokens, err := auth.ParseTokenFile(strings.NewReader("tok,bob,1,\"system:masters\"\n"))
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewRequestMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{}")) })
	chain := Chain(api,
		Recovery(slog.New(slog.NewTextHandler(io.Discard, nil))),
		request.WithRequestInfo,
		BodyDeadline(0),
		Authentication(auth.Union{auth.X509{}, tokens}, m),
		Metrics(m, servesPodsAndConfigMaps),
		Authorization(auth.NewAuthorizer(nil)),
		MaxInFlight(InFlightLimits{}),
		Timeout(0),
		BodyLimit(0),
	)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"bare", api}, {"chain", chain}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil)
				r.Header.Set("Authorization", "Bearer tok")
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}
