package e2e

import (
	"os/exec"
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
