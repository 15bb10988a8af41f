package client

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDefaultUserAgent(t *testing.T) {
	for _, tc := range []struct{ argv0, version, want string }{
		{"/usr/local/bin/my-controller", "v1.2.3", "my-controller/v1.2.3 (linux/arm64) listwatch"},
		{"my-controller", "v0.1.0-dev", "my-controller/v0.1.0 (linux/arm64) listwatch"},
		{"./bin/op", "v2.0.0-rc.1+meta", "op/v2.0.0 (linux/arm64) listwatch"},
		{"", "", "unknown/unknown (linux/arm64) listwatch"},
	} {
		if got := buildUserAgent(tc.argv0, tc.version, "linux", "arm64"); got != tc.want {
			t.Errorf("buildUserAgent(%q, %q) = %q, want %q", tc.argv0, tc.version, got, tc.want)
		}
	}
	// This test binary's own: client.test/<Version without suffix>.
	version, _, _ := strings.Cut(Version, "-")
	want := filepath.Base(os.Args[0]) + "/" + version + " (" + runtime.GOOS + "/" + runtime.GOARCH + ") listwatch"
	if got := DefaultUserAgent(); got != want {
		t.Fatalf("DefaultUserAgent() = %q, want %q", got, want)
	}
}
