package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// libraryPackages are the client side: what a controller author imports.
var libraryPackages = []string{
	"github.com/listwatch/listwatch/object",
	"github.com/listwatch/listwatch/wire",
	"github.com/listwatch/listwatch/client",
	"github.com/listwatch/listwatch/informer",
	"github.com/listwatch/listwatch/workqueue",
	"github.com/listwatch/listwatch/controller",
	"github.com/listwatch/listwatch/controller/leaderelection",
	"github.com/listwatch/listwatch/trace",
}

// forbiddenInLibrary are module path prefixes the library must not pull
// into its users' builds.
var forbiddenInLibrary = []string{"k8s.io/", "sigs.k8s.io/", "go.etcd.io/", "google.golang.org/grpc", "gonum.org/",
	"github.com/listwatch/listwatch/server", "github.com/listwatch/listwatch/server/storage", "github.com/listwatch/listwatch/server/apiserver"}

// TestLibraryImportsNoServerDependencies: the library packages' import
// graph (not their tests') holds nothing from Kubernetes, etcd, gRPC or
// plotting, nor any server package.
func TestLibraryImportsNoServerDependencies(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, libraryPackages...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(libraryPackages) {
		t.Fatalf("go list -deps listed %d packages", len(deps))
	}
	for _, d := range deps {
		for _, f := range forbiddenInLibrary {
			if strings.HasPrefix(d, f) {
				t.Errorf("library depends on %s", d)
			}
		}
	}
}

// forbiddenModules are module path prefixes the library's go.mod must not
// bring into its users' module graphs.
var forbiddenModules = []string{"k8s.io/", "sigs.k8s.io/", "go.etcd.io/", "google.golang.org/grpc", "gonum.org/",
	"github.com/listwatch/listwatch/server"}

// TestLibraryModuleAddsNoServerDependencies meets the library as a user
// does: a scratch module whose main package imports every library
// package, requiring the library module (replaced by this repository's
// root), is tidied; neither its go.mod nor its module graph (go list -m
// all, which minimum version selection reads from the library's go.mod,
// tests' requirements included) may hold Kubernetes, etcd, gRPC or
// plotting modules, or the server module. The go command works offline
// from the module cache when it is warm; it uses the configured proxy
// otherwise.
func TestLibraryModuleAddsNoServerDependencies(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(wd, "..", "..") // server/e2e → the repository root
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !bytes.HasPrefix(rootMod, []byte("module github.com/listwatch/listwatch\n")) {
		t.Fatalf("%s is not the library module's root: %v", root, err)
	}
	dir := t.TempDir()
	var main strings.Builder
	main.WriteString("// Command scratch imports every package of the library.\npackage main\n\nimport (\n")
	for _, p := range libraryPackages {
		main.WriteString("\t_ \"" + p + "\"\n")
	}
	main.WriteString(")\n\nfunc main() {}\n")
	gomod := "module example.com/scratch\n\ngo 1.26.0\n\nrequire github.com/listwatch/listwatch v0.0.0\n\n" +
		"replace github.com/listwatch/listwatch => " + root + "\n"
	// The library's go.sum holds the checksums of every module its graph
	// can reach, so that tidy need not ask the checksum database.
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"main.go": []byte(main.String()), "go.mod": []byte(gomod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out
	}
	goCmd("mod", "tidy")
	tidied, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	graph := goCmd("list", "-m", "all")
	var modules []string
	for line := range strings.Lines(string(graph)) {
		if f := strings.Fields(line); len(f) > 0 {
			modules = append(modules, f[0])
		}
	}
	// The graph was read: the library and its own requirements are in it.
	for _, want := range []string{"github.com/listwatch/listwatch", "github.com/prometheus/client_golang"} {
		found := false
		for _, m := range modules {
			found = found || m == want
		}
		if !found {
			t.Fatalf("go list -m all of the scratch module lacks %s:\n%s", want, graph)
		}
	}
	for _, f := range forbiddenModules {
		for line := range strings.Lines(string(tidied)) {
			for _, word := range strings.Fields(line) {
				if strings.HasPrefix(word, f) {
					t.Errorf("the tidied go.mod of a module importing the library requires %s", strings.TrimSpace(line))
				}
			}
		}
		for _, m := range modules {
			if strings.HasPrefix(m, f) {
				t.Errorf("the module graph of a module importing the library holds %s (required by the library's go.mod)", m)
			}
		}
	}
}
