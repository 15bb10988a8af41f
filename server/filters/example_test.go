package filters_test

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/filters"
	"github.com/listwatch/listwatch/server/internal/pki"
	"github.com/listwatch/listwatch/server/request"
)

// The order `listwatch serve` uses: outermost first.
func ExampleChain() {
	creds, err := pki.EnsureCredentials("/var/lib/listwatch/pki", nil)
	if err != nil {
		panic(err)
	}
	var tokens *auth.TokenFile // auth.ParseTokenFile(open(creds.Path(pki.TokenFile)))
	metrics, err := filters.NewRequestMetrics(prometheus.NewRegistry())
	if err != nil {
		panic(err)
	}
	var api http.Handler // the server core's Handler()

	h := filters.Chain(api,
		filters.Recovery(slog.Default()),
		request.WithRequestInfo,
		filters.BodyDeadline(filters.DefaultRequestTimeout),
		filters.Authentication(auth.AnonymousPublicInfo{Authenticator: auth.Union{
			auth.X509{Roots: pki.ClientCAPool(creds)}, tokens}}, metrics),
		filters.Metrics(metrics, nil),                  // the server core's Serves
		filters.Authorization(auth.NewAuthorizer(nil)), // nil policy: system:masters only
		filters.MaxInFlight(filters.InFlightLimits{}),  // 400 / 200 / 10000 / 1000 per user
		filters.Timeout(filters.DefaultRequestTimeout),
		filters.BodyLimit(filters.DefaultMaxBodyBytes),
	)
	srv := &http.Server{Addr: "127.0.0.1:6443", Handler: h, TLSConfig: pki.TLSConfig(creds),
		ReadHeaderTimeout: 10 * time.Second}
	_ = srv.ListenAndServeTLS("", "")
}
