package server

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/listwatch/listwatch/wire"
)

// GitVersion is the version /version reports: the Kubernetes API level
// listwatch speaks, marked as listwatch's.
const GitVersion = "v1.37.2-listwatch"

// serveNonResource answers the paths that are not resources, and reports
// whether it did.
func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/version":
		// Indented whatever the client, as kube's.
		b, _ := json.MarshalIndent(versionInfo(), "", "  ")
		writeBody(w, http.StatusOK, mediaJSON, b)
	case p == "/healthz" || p == "/livez" || strings.HasPrefix(p, "/healthz/") || strings.HasPrefix(p, "/livez/"):
		writeText(w, http.StatusOK, "ok")
	case p == "/readyz" || strings.HasPrefix(p, "/readyz/"):
		s.readyz(w, r)
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

// readyz is ready once Run has bootstrapped and storage answers a
// linearizable read.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var failed []string
	if _, err := s.store.CurrentRevision(ctx); err != nil {
		// As kube-apiserver: the reason goes to the log, not to the
		// client, since /readyz is readable anonymously.
		s.log.Warn("readyz: etcd check failed", "err", err)
		failed = append(failed, "[-]etcd failed: reason withheld")
	}
	select {
	case <-s.booted:
	default:
		failed = append(failed, "[-]poststarthook/listwatch-bootstrap failed: not finished")
	}
	if len(failed) > 0 {
		writeText(w, http.StatusInternalServerError, strings.Join(failed, "\n")+"\nreadyz check failed\n")
		return
	}
	writeText(w, http.StatusOK, "ok")
}
