package client

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// ServiceAccountDir is where Kubernetes mounts a pod's service account
// credentials.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// ErrNotInCluster is returned by InClusterConfig outside a pod.
var ErrNotInCluster = errors.New("client: not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")

// InClusterConfig is the Config of a pod talking to its own cluster: the
// API server at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, verified
// with the service account's ca.crt, authenticated with its token. As in
// client-go, both are named by file (CAFile, BearerTokenFile), so both are
// re-read as they rotate (the kube-root-ca.crt ConfigMap the kubelet
// projects changes when the cluster's CA does); Namespace is the pod's
// namespace.
func InClusterConfig() (*Config, error) {
	return inClusterConfig(ServiceAccountDir, os.Getenv)
}

// inClusterConfig is InClusterConfig with the mount point and environment
// given, for tests.
func inClusterConfig(dir string, getenv func(string) string) (*Config, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, ErrNotInCluster
	}
	tokenFile := filepath.Join(dir, "token")
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("%w: service account token: %w", ErrConfig, err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if _, err := os.Stat(caFile); err != nil {
		return nil, fmt.Errorf("%w: service account CA: %w", ErrConfig, err)
	}
	cfg := &Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		CAFile:          caFile,
		BearerToken:     strings.TrimSpace(string(token)),
		BearerTokenFile: tokenFile,
	}
	if ns, err := os.ReadFile(filepath.Join(dir, "namespace")); err == nil {
		cfg.Namespace = strings.TrimSpace(string(ns))
	}
	return cfg, nil
}
