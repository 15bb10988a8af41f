package e2e

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
// errors it raises (codes, reasons, messages, causes), a watch, the
// defaults and subresources of several kinds, a CRD and its objects
// through CustomObjectsApi and the dynamic client's discovery. Every line
// it prints must be the same (the script asks the test, by a line of its
// own, to compact etcd, and then sees the 410 an old resourceVersion
// gets); without the binary, the same as kube's
// answers on record, made with the client version the record's first
// line names (another version is compared only with a live
// kube-apiserver).
func TestPythonClientSameAsKube(t *testing.T) {
	t.Parallel()
	py := pythonWithKubernetes(t)
	s := startServer(t, "")
	got := runPythonClient(t, py, s.KubeconfigPath(), func(ctx context.Context) error {
		rev, err := s.Store().CurrentRevision(ctx)
		if err != nil {
			return err
		}
		return s.Store().Compact(ctx, rev)
	})
	record := readKubeRecord(t, pythonClientRecord)
	sameClient := record[0] == got[0]
	if _, err := kubeapiserver.Binary(); err != nil {
		if !sameClient {
			t.Skipf("no kube-apiserver (%v), and its answers on record are for %q, not %q", err, record[0], got[0])
		}
		t.Logf("no kube-apiserver (%v): comparing with its answers on record", err)
		compareLogs(t, got, record)
		return
	}
	// A kube-apiserver of its own: the dynamic client's discovery reads
	// every group-version the server lists, and the package's shared one
	// serves the other tests' CRDs and APIServices, some of them broken
	// on purpose (a group-version listed but answering 404).
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	k, err := kubeapiserver.Start(ctx, kubeapiserver.Options{})
	if err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	defer func() {
		if err := k.Close(); err != nil {
			t.Errorf("kube-apiserver: %v", err)
		}
	}()
	kube := runPythonClient(t, py, k.KubeconfigPath, func(ctx context.Context) error {
		// As kube's compactor: compact, then name the revision under the
		// key kube-apiserver's watch caches learn compactions from.
		rev, err := k.Compact(ctx)
		if err != nil {
			return err
		}
		_, err = k.Etcd().Put(ctx, "compact_rev_key", strconv.FormatInt(rev, 10))
		return err
	})
	compareLogs(t, got, kube)
	if !sameClient && !*updatePythonRecord {
		t.Logf("answers on record are for %q, not %q: not compared", record[0], got[0])
		return
	}
	checkKubeRecord(t, pythonClientRecord, kube, *updatePythonRecord, "-update-python-record")
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
	msg := fmt.Sprintf("no Python 3 with the kubernetes package (tried %v): apt-get install python3-kubernetes", tried)
	if os.Getenv("LISTWATCH_REQUIRE_PYTHON_CLIENT") != "" {
		t.Fatal(msg + " ($LISTWATCH_REQUIRE_PYTHON_CLIENT is set)")
	}
	t.Skip(msg)
	return ""
}

// compactLine is the line the script prints when it wants etcd compacted
// at its current revision; the test answers with an empty line once it is
// (or "no" if it could not be).
const compactLine = "@compact"

// runPythonClient runs testdata/python_client.py against the server of
// kubeconfig, in the namespace python-client, compacting etcd with compact
// when the script asks, and returns its lines.
func runPythonClient(t *testing.T, py, kubeconfig string, compact func(context.Context) error) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, py, "testdata/python_client.py", kubeconfig, "python-client",
		filepath.Join(dir, "discovery.json"))
	cmd.Env = append(os.Environ(), "HOME="+dir, "PYTHONDONTWRITEBYTECODE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if sc.Text() != compactLine {
			lines = append(lines, sc.Text())
			continue
		}
		answer := "\n"
		if err := compact(ctx); err != nil {
			t.Errorf("compacting for the script: %v", err)
			answer = "no\n"
		}
		if _, err := io.WriteString(stdin, answer); err != nil {
			t.Errorf("answering the script: %v", err)
		}
	}
	scanErr := sc.Err()
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatal(err)
		}
		t.Fatalf("python_client.py against %s: %v\nstdout:\n%s\nstderr:\n%s", kubeconfig, err, strings.Join(lines, "\n"), stderr.String())
	}
	if scanErr != nil {
		t.Fatal(scanErr)
	}
	return lines
}

// readKubeRecord reads kube-apiserver's answers to a script, kept in a
// file for machines without the binary, one line a step.
func readKubeRecord(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// checkKubeRecord requires the record at path to hold kube, the answers a
// live kube-apiserver just gave, or writes them there when update is set
// (flag names the test flag that does).
func checkKubeRecord(t *testing.T, path string, kube []string, update bool, flag string) {
	t.Helper()
	live := strings.Join(kube, "\n") + "\n"
	if update {
		if err := os.WriteFile(path, []byte(live), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want, err := os.ReadFile(path); err != nil || string(want) != live {
		t.Errorf("%s is not what kube-apiserver answers now (%v): run with %s", path, err, flag)
	}
}
