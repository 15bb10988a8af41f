package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/listwatch/listwatch/wire"
)

// GitVersion is the version /version reports: the Kubernetes release
// whose API listwatch serves, as that release's kube-apiserver reports it.
// No "-listwatch" suffix: semantic-version checks (Helm's kubeVersion
// constraints among them) take a suffixed version for a pre-release and
// refuse it. /version's gitCommit says it is listwatch.
const GitVersion = "v1.37.2"

// serveNonResource answers the paths that are not resources, and reports
// whether it did.
func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case (p == "/version" || p == "/api") && r.Method != http.MethodGet:
		writeResourceError(w, r, methodNotAllowed()) // getOnly
	case p == "/version":
		// Indented whatever the client, as kube's.
		b, _ := json.MarshalIndent(versionInfo(), "", "  ")
		writeBody(w, http.StatusOK, mediaJSON, b)
	case s.health[r.URL.Path] != nil:
		s.health[r.URL.Path].ServeHTTP(w, r)
	case p == "/openapi/v2" || p == "/openapi/v3" || strings.HasPrefix(p, "/openapi/"):
		s.openAPI(w, r)
	case p == "/api" || p == "/apis":
		s.aggDiscovery.serve(s, w, r, p)
	case discoveryPath(p):
		s.discovery(w, r, p)
	default:
		return false
	}
	return true
}

// getOnly: kube-apiserver serves /version, /api and each group version's
// discovery document (/api/v1, /apis/{g}/{v}) as GET routes only, and
// answers any other method there, HEAD too, with a 405 Status; /apis,
// /apis/{g}, OpenAPI and the health checks answer every method as GET.

// getOnlyPath: p (without a trailing slash) is one of kube's GET routes
// (getOnly) if it exists.
func getOnlyPath(p string) bool {
	if p == "/version" || p == "/api" {
		return true
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	return parts[0] == "api" && len(parts) == 2 || parts[0] == "apis" && len(parts) == 3
}

// discoveryPath: /api/v1, /apis/{g}, /apis/{g}/{v}.
func discoveryPath(p string) bool {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case parts[0] == "api":
		return len(parts) == 2
	case parts[0] == "apis":
		return len(parts) == 2 || len(parts) == 3
	}
	return false
}

func writeText(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(s))
}

func versionInfo() wire.Version {
	return wire.Version{
		Major: "1", Minor: "37", EmulationMajor: "1", EmulationMinor: "37",
		MinCompatibilityMajor: "1", MinCompatibilityMinor: "36",
		GitVersion: GitVersion, GitCommit: "listwatch",
		GitTreeState: "clean", BuildDate: "1970-01-01T00:00:00Z",
		GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// healthPaths serves /healthz, /livez and /readyz through kube's own
// handlers (k8s.io/apiserver/pkg/server/healthz), as kube-apiserver does:
// each answers "ok", or with ?verbose one line per check, and ?exclude=
// skips a check; a failed check makes it a 500 listing the checks, the
// reason withheld (the paths are readable anonymously) and logged; each
// check has its own path (/readyz/etcd). The paths are matched exactly,
// as kube's mux does (no trailing slash, no redirects); any other path
// below them is no route's, Go's plain 404, as kube's.
type healthPaths map[string]http.Handler

func (m healthPaths) Handle(pattern string, h http.Handler) { m[pattern] = h }

// newHealthPaths installs the checks. Those of kube-apiserver that
// listwatch has no counterpart for (log, which watches klog's flushing;
// informer-sync; etcd-readiness, the same read as etcd with kube's other
// timeout) are left out rather than faked; the post-start hook is
// listwatch's own bootstrap.
func (s *Server) newHealthPaths() healthPaths {
	etcd := healthz.NamedCheck("etcd", func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := s.store.CurrentRevision(ctx); err != nil {
			s.log.Warn("health: etcd check failed", "err", err)
			return err
		}
		return nil
	})
	boot := healthz.NamedCheck("poststarthook/listwatch-bootstrap", func(*http.Request) error {
		select {
		case <-s.booted:
			return nil
		default:
			return errors.New("not finished")
		}
	})
	m := healthPaths{}
	healthz.InstallHandler(m, healthz.PingHealthz, etcd, boot)
	healthz.InstallLivezHandler(m, healthz.PingHealthz, etcd, boot)
	healthz.InstallReadyzHandler(m, healthz.PingHealthz, etcd, boot, healthz.NewShutdownHealthz(s.stopping))
	return m
}
