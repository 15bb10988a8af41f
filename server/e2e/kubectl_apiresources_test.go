package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKubectlAPIResourcesMatchKube: `kubectl api-resources` and `kubectl
// api-versions` against serve print what they print against a real
// kube-apiserver v1.37.2 (the fixture in server/testdata/kube-v1.37.2),
// line for line.
func TestKubectlAPIResourcesMatchKube(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	for _, tc := range []struct{ file, cmd string }{
		{"api-resources.txt", "api-resources -o wide"},
		{"api-versions.txt", "api-versions"},
	} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "kube-v1.37.2", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		want := normalizeLines(string(b))
		got := normalizeLines(kubectl(t, s, "", strings.Fields(tc.cmd)...))
		if !slices.Equal(got, want) {
			t.Errorf("kubectl %s:\nours:\n%s\nkube:\n%s", tc.cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// normalizeLines splits out into lines of single-space-separated fields.
func normalizeLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return lines
}
