package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
	"github.com/listwatch/listwatch/server/demo"
	"github.com/listwatch/listwatch/wire"
)

// cliLeakCheck registers, first, a cleanup that runs last: after the
// server and every subprocess reader have stopped.
func cliLeakCheck(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		goleak.VerifyNone(t,
			goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
			goleak.IgnoreCurrent(),
		)
	})
}

// cli is this command as a process for the tests that run it so: the
// test binary itself, started under the command's name (a link to it, in
// a directory removed when the tests end), runs the command's main instead
// of the tests (TestMain). That is main compiled as `go build` compiles
// it, race detector included, without linking the whole server a second
// time (a race-enabled link of it costs CI about 20 s of CPU).
var cli struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// asCommandEnv marks a process started as the command, so that the
// processes it starts from its own executable (bench's informer children)
// run as the command too.
const asCommandEnv = "LISTWATCH_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "listwatch" || os.Getenv(asCommandEnv) != "" {
		os.Setenv(asCommandEnv, "1")
		main()
		os.Exit(0)
	}
	code := m.Run()
	if cli.dir != "" {
		os.RemoveAll(cli.dir)
	}
	os.Exit(code)
}

// commandPath returns the path of this command: a link named listwatch to
// the test binary, made on first use.
func commandPath(t *testing.T) string {
	t.Helper()
	cli.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			cli.err = err
			return
		}
		if cli.dir, cli.err = os.MkdirTemp("", "listwatch-cli-test-"); cli.err != nil {
			return
		}
		cli.path = filepath.Join(cli.dir, "listwatch")
		cli.err = os.Symlink(self, cli.path)
	})
	if cli.err != nil {
		t.Fatal(cli.err)
	}
	return cli.path
}

// cliServer is an in-process listwatch server for the CLI tests.
type cliServer struct {
	kubeconfig string
	client     *client.Client
	cms        *client.Resource[*object.Unstructured]
}

func startCLIServer(t *testing.T) *cliServer {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := apiservertest.Start(t, "")
	cfg, err := client.LoadKubeconfig(srv.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = quiet
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	rctx, rcancel := context.WithTimeout(t.Context(), time.Minute)
	defer rcancel()
	if err := demo.WaitReady(rctx, c); err != nil {
		t.Fatal(err)
	}
	cms := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")
	return &cliServer{kubeconfig: srv.KubeconfigPath(), client: c, cms: cms}
}

func (s *cliServer) create(t *testing.T, name string, data map[string]any) *object.Unstructured {
	t.Helper()
	u := &object.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName(name)
	u.SetNested(data, "data")
	got, err := s.cms.Create(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// proc is a running listwatch subprocess whose stdout is read line by line.
type proc struct {
	cmd    *exec.Cmd
	lines  chan string // closed at EOF
	stderr *bytes.Buffer
}

func startCLI(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=", "TMPDIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, lines: make(chan string, 1000), stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		<-readerDone
	})
	return p
}

// next returns the next stdout line, failing the test after 30s or at EOF.
func (p *proc) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("output ended; stderr:\n%s", p.stderr)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("no output line in 30s; stderr:\n%s", p.stderr)
	}
	return ""
}

// interrupt sends SIGINT and checks that the command exits cleanly.
func (p *proc) interrupt(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v; stderr:\n%s", err, p.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit 30s after SIGINT")
	}
}

var textLine = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (Add|Update|Delete): (\S+)$`)

// expectText reads one text event line and checks its type and key.
func (p *proc) expectText(t *testing.T, typ, key string) {
	t.Helper()
	l := p.next(t)
	m := textLine.FindStringSubmatch(l)
	if m == nil || m[2] != typ || m[3] != key {
		t.Fatalf("line %q, want %s: %s", l, typ, key)
	}
	ts, err := time.ParseInLocation(time.DateTime, m[1], time.Local)
	if err != nil || time.Since(ts) > time.Hour || time.Until(ts) > time.Minute {
		t.Fatalf("line %q: timestamp not local now (%v)", l, err)
	}
}

func TestWatchCommand(t *testing.T) {
	cliLeakCheck(t)
	bin := commandPath(t)
	s := startCLIServer(t)
	s.create(t, "marker", map[string]any{"k": "v"})

	t.Run("AddUpdateDelete", func(t *testing.T) {
		p := startCLI(t, bin, nil, "watch", "configmaps", "-n", "default", "--kubeconfig", s.kubeconfig, "--resync", "0")
		p.expectText(t, "Add", "default/marker") // the initial list: the watch is set up
		x := s.create(t, "x", map[string]any{"k": "1"})
		p.expectText(t, "Add", "default/x")
		x.SetNested(map[string]any{"k": "2"}, "data")
		if _, err := s.cms.Update(t.Context(), x); err != nil {
			t.Fatal(err)
		}
		p.expectText(t, "Update", "default/x")
		if _, err := s.cms.Delete(t.Context(), "x", wire.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		p.expectText(t, "Delete", "default/x")
		p.interrupt(t)
		if l, ok := <-p.lines; ok {
			t.Errorf("extra output %q", l)
		}
	})

	t.Run("ResyncIsAnUpdate", func(t *testing.T) {
		// $KUBECONFIG instead of the flag, and no -n: the context's
		// namespace, or "default".
		p := startCLI(t, bin, []string{"KUBECONFIG=" + s.kubeconfig}, "watch", "cm", "--resync", "1s")
		p.expectText(t, "Add", "default/marker")
		// Nothing changes on the server, yet every resync delivers an Update.
		p.expectText(t, "Update", "default/marker")
		p.expectText(t, "Update", "default/marker")
		p.interrupt(t)
	})

	t.Run("JSON", func(t *testing.T) {
		p := startCLI(t, bin, nil, "watch", "configmap", "--kubeconfig", s.kubeconfig, "-o", "json", "--resync", "1s")
		first := decodeJSONLine(t, p.next(t))
		if first.Type != "Add" || first.Key != "default/marker" {
			t.Fatalf("first event %+v", first)
		}
		resync := decodeJSONLine(t, p.next(t))
		if resync.Type != "Update" || resync.Key != "default/marker" || resync.ResourceVersion != first.ResourceVersion {
			t.Fatalf("resync event %+v, want an Update at resourceVersion %s", resync, first.ResourceVersion)
		}
		p.interrupt(t)
	})

	t.Run("ContextNamespaceAndAllNamespaces", func(t *testing.T) {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skip("kubectl not installed")
		}
		// A copy of the kubeconfig whose context names namespace "team",
		// edited by kubectl itself.
		raw, err := os.ReadFile(s.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		teamConfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(teamConfig, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", teamConfig,
			"config", "set-context", "--current", "--namespace=team").CombinedOutput(); err != nil {
			t.Fatalf("kubectl config set-context: %v\n%s", err, out)
		}
		ns := &object.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName("team")
		if _, err := client.NewResource[*object.Unstructured](s.client, client.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
		cm := &object.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		cm.SetName("t1")
		if _, err := client.NewResource[*object.Unstructured](s.client, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("team").Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}

		p := startCLI(t, bin, nil, "watch", "configmaps", "--kubeconfig", teamConfig, "--resync", "0")
		p.expectText(t, "Add", "team/t1")
		s.create(t, "after-team", map[string]any{"k": "v"}) // in default: not watched
		p.interrupt(t)
		if l, ok := <-p.lines; ok {
			t.Errorf("watch of team printed %q", l)
		}

		all := startCLI(t, bin, nil, "watch", "configmaps", "-A", "--kubeconfig", teamConfig, "--resync", "0")
		// The server's own ConfigMaps in kube-system (as kube-apiserver's)
		// come too, in any order with the test's.
		seen := map[string]bool{}
		for !seen["team/t1"] || !seen["default/marker"] || !seen["default/after-team"] {
			m := textLine.FindStringSubmatch(all.next(t))
			if m == nil || m[2] != "Add" || seen[m[3]] {
				t.Fatalf("unexpected line %v (seen %v)", m, seen)
			}
			seen[m[3]] = true
			if len(seen) > 8 {
				t.Fatalf("-A saw %v", seen)
			}
		}
		all.interrupt(t)
	})

	t.Run("UnknownResource", func(t *testing.T) {
		p := startCLI(t, bin, nil, "watch", "gizmos", "--kubeconfig", s.kubeconfig)
		if l, ok := <-p.lines; ok {
			t.Errorf("output %q", l)
		}
		err := p.cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("exit: %v", err)
		}
		if !strings.Contains(p.stderr.String(), `the server doesn't have a resource type "gizmos"`) {
			t.Fatalf("stderr: %s", p.stderr)
		}
	})
}

type jsonEvent struct {
	Time            string         `json:"time"`
	Type            string         `json:"type"`
	Key             string         `json:"key"`
	ResourceVersion string         `json:"resourceVersion"`
	Object          map[string]any `json:"object"`
}

func decodeJSONLine(t *testing.T, line string) jsonEvent {
	t.Helper()
	var ev jsonEvent
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	if _, err := time.Parse(time.RFC3339Nano, ev.Time); err != nil {
		t.Fatalf("time %q: %v", ev.Time, err)
	}
	meta, _ := ev.Object["metadata"].(map[string]any)
	if meta["resourceVersion"] != ev.ResourceVersion || ev.Object["kind"] != "ConfigMap" || ev.Object["data"] == nil {
		t.Fatalf("object %v does not match event %+v", ev.Object, ev)
	}
	if _, ok := meta["managedFields"]; ok {
		t.Errorf("managedFields were not dropped")
	}
	return ev
}

func TestDemoCommand(t *testing.T) {
	cliLeakCheck(t)
	bin := commandPath(t)
	p := startCLI(t, bin, nil, "demo")
	var lines []string
	for l := range p.lines {
		lines = append(lines, l)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(lines, "\n"), p.stderr)
	}
	out := strings.Join(lines, "\n")
	if len(lines) < 2 {
		t.Fatalf("output:\n%s", out)
	}
	// At its default level (error) the demo logs nothing: neither its
	// server's klog lines nor kube's "Found stale data" error at start.
	if p.stderr.Len() != 0 {
		t.Errorf("stderr at the default log level:\n%s", p.stderr)
	}
	if !regexp.MustCompile(`^demo done: 8 events, \d+ reconciles, 0 errors in \S+$`).MatchString(lines[len(lines)-1]) {
		t.Errorf("summary line %q", lines[len(lines)-1])
	}
	for _, want := range []string{
		" Add: default/demo\n", " Update: default/demo-mirror\n", " Delete: default/demo-mirror\n",
		" reconcile default/demo: created mirror\n", " reconcile default/demo: updated mirror\n",
		" reconcile default/demo: deleted mirror\n",
	} {
		if !strings.Contains(out+"\n", want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`data in (\S+), removed at exit`).FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("first line %q", lines[0])
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("data dir %s still there: %v", m[1], err)
	}
}

func TestEventPrinterText(t *testing.T) {
	var buf bytes.Buffer
	at := time.Date(2023, 6, 3, 14, 19, 21, 0, time.Local)
	p := &eventPrinter{w: &buf, now: func() time.Time { return at }}
	u := &object.Unstructured{}
	u.SetNamespace("default")
	u.SetName("example")
	p.print("Add", u)
	u2 := &object.Unstructured{}
	u2.SetName("cluster-scoped")
	p.print("Delete", u2)
	want := "2023-06-03 14:19:21 Add: default/example\n2023-06-03 14:19:21 Delete: cluster-scoped\n"
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
}

func TestWatchNamespace(t *testing.T) {
	for _, tc := range []struct {
		o       watchOptions
		context string
		want    string
	}{
		{watchOptions{}, "", "default"},
		{watchOptions{}, "team", "team"},
		{watchOptions{namespace: "x"}, "team", "x"},
		{watchOptions{namespace: "x", allNamespaces: true}, "team", ""},
	} {
		if got := watchNamespace(tc.o, tc.context); got != tc.want {
			t.Errorf("watchNamespace(%+v, %q) = %q, want %q", tc.o, tc.context, got, tc.want)
		}
	}
}
