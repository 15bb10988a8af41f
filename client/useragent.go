package client

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultUserAgent is the User-Agent a Client sends when Config.UserAgent
// is empty, shaped as client-go's rest.DefaultKubernetesUserAgent:
// "<program>/<Version> (<GOOS>/<GOARCH>) listwatch", where program is the
// base name of os.Args[0] and Version loses any "-suffix", for example
// "my-controller/v0.1.0 (linux/amd64) listwatch".
//
// kube-apiserver names the field manager of a write that gives none
// (managedFields, server-side apply) after the User-Agent up to its first
// "/", so each program's writes are owned by the program's name, as with
// client-go, and not by one "listwatch" shared by every program built on
// this library. The last word says which client library sent the request
// where client-go puts "kubernetes/<commit>".
func DefaultUserAgent() string {
	return buildUserAgent(os.Args[0], Version, runtime.GOOS, runtime.GOARCH)
}

func buildUserAgent(argv0, version, goos, goarch string) string {
	program := "unknown"
	if argv0 != "" {
		program = filepath.Base(argv0)
	}
	version, _, _ = strings.Cut(version, "-")
	if version == "" {
		version = "unknown"
	}
	return program + "/" + version + " (" + goos + "/" + goarch + ") listwatch"
}
