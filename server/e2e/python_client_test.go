package e2e

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

var updatePythonRecord = flag.Bool("update-python-record", false,
	"write kube-apiserver's answers to the Python client script to testdata/python_client_kube.txt")

// pythonClientRecord holds kube-apiserver v1.37.2's answers to
// testdata/python_client.py, for machines without the binary.
const pythonClientRecord = "testdata/python_client_kube.txt"

// TestPythonClientSameAsKube: the Kubernetes Python client (Debian's
// python3-kubernetes) runs the same script against serve and a real
// kube-apiserver: typed writes, reads, selectors, pages, patches, the
// errors it raises (codes, reasons, messages, causes), a watch and a
// watch too old, a pod's defaults, a CRD and its objects through
// CustomObjectsApi and the dynamic client's discovery. Every line it
// prints must be the same; without the binary, the same as kube's answers
// on record.
func TestPythonClientSameAsKube(t *testing.T) {
	py := pythonWithKubernetes(t)
	s := startServer(t, "")
	got := runPythonClient(t, py, s.KubeconfigPath())
	if _, err := kubeapiserver.Binary(); err != nil {
		t.Logf("no kube-apiserver (%v): comparing with its answers on record", err)
		want, err := os.ReadFile(pythonClientRecord)
		if err != nil {
			t.Fatal(err)
		}
		compareLogs(t, got, strings.Split(strings.TrimSuffix(string(want), "\n"), "\n"))
		return
	}
	kube := runPythonClient(t, py, kubeServer(t).KubeconfigPath)
	compareLogs(t, got, kube)
	if *updatePythonRecord {
		if err := os.WriteFile(pythonClientRecord, []byte(strings.Join(kube, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(pythonClientRecord); err != nil || string(want) != strings.Join(kube, "\n")+"\n" {
		t.Errorf("%s is not what kube-apiserver answers now (%v): run with -update-python-record", pythonClientRecord, err)
	}
}

// pythonWithKubernetes returns a Python 3 that imports the kubernetes
// package, or skips the test.
func pythonWithKubernetes(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		out, err := exec.CommandContext(ctx, path, "-c", "import kubernetes; print(kubernetes.__version__)").CombinedOutput()
		cancel()
		if err == nil {
			t.Logf("%s: kubernetes %s", path, strings.TrimSpace(string(out)))
			return path
		}
		tried = append(tried, path)
	}
	t.Skipf("no Python 3 with the kubernetes package (tried %v): apt-get install python3-kubernetes", tried)
	return ""
}

// runPythonClient runs testdata/python_client.py against the server of
// kubeconfig, in the namespace python-client, and returns its lines.
func runPythonClient(t *testing.T, py, kubeconfig string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, py, "testdata/python_client.py", kubeconfig, "python-client",
		filepath.Join(dir, "discovery.json"))
	cmd.Env = append(os.Environ(), "HOME="+dir, "PYTHONDONTWRITEBYTECODE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatal(err)
		}
		t.Fatalf("python_client.py against %s: %v\nstdout:\n%s\nstderr:\n%s", kubeconfig, err, out, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}
