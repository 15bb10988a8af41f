package client

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Compression says whether a Client asks for responses in gzip.
type Compression int

const (
	// CompressionAuto asks for gzip unless the server's address (Host) is
	// a loopback address or "localhost". There gzip saves no bandwidth and
	// costs CPU at both ends: a server compressing 72 MB of pods at gzip's
	// fastest level and the client inflating it, on the same machine.
	// kube-apiserver's own loopback client, kube-scheduler and
	// kube-controller-manager turn compression off for the same reason.
	CompressionAuto Compression = iota
	// CompressionGzip always asks for gzip (client-go's default).
	CompressionGzip
	// CompressionNone never asks for it (client-go's DisableCompression,
	// or a kubeconfig cluster's disable-compression: true).
	CompressionNone
)

func (c Compression) String() string {
	switch c {
	case CompressionAuto:
		return "auto"
	case CompressionGzip:
		return "gzip"
	case CompressionNone:
		return "none"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// asks reports whether a Client of the server at base asks for gzip.
func (c Compression) asks(base *url.URL) bool {
	switch c {
	case CompressionGzip:
		return true
	case CompressionNone:
		return false
	}
	return !isLoopback(base.Hostname())
}

// isLoopback reports whether host (a URL's, without brackets or port) is
// a loopback IP address or localhost.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
