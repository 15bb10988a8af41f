package apiserver

import (
	"net/http"
	"net/http/pprof"
)

// handleProfiling serves net/http/pprof under /debug/pprof/ on mux, as
// kube-apiserver's --profiling does. The paths are non-resource requests
// like any other: authenticated, and authorized for system:masters or by
// an ABAC policy's nonResourcePath. Anonymous requests get 401 (the paths
// are not public information).
func handleProfiling(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
