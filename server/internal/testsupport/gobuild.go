package testsupport

import (
	"context"
	"os/exec"
)

// GoBuild returns the command that builds pkg into out for a test, with
// -race when the test itself runs under the race detector. The build then
// reuses the dependencies `go test -race` compiled: without it, a test
// that builds a binary (the CLI, serve, an etcd member) made CI compile
// every dependency, Kubernetes' libraries included, a second time, which
// on a fresh machine took the cmd/listwatch tests 19 minutes.
func GoBuild(ctx context.Context, out, pkg string) *exec.Cmd {
	args := []string{"build"}
	if raceEnabled {
		args = append(args, "-race")
	}
	return exec.CommandContext(ctx, "go", append(args, "-o", out, pkg)...)
}
