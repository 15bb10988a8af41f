package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/server/bench"
)

func verifyNoLeaks(t *testing.T) {
	t.Helper()
	goleak.VerifyNone(t,
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreCurrent(),
	)
}

// runRoot runs the listwatch command in-process and returns stdout.
func runRoot(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := newRootCommand()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("listwatch %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

func TestBenchListCommand(t *testing.T) {
	defer verifyNoLeaks(t)
	reportDir := filepath.Join(t.TempDir(), "report")
	out := runRoot(t, "bench", "list", "--data-dir", t.TempDir(), "--objects", "30",
		"--page-sizes", "10,0", "--rv-modes", "unset,0", "--repeat", "1", "--json", "--report", reportDir)
	var res bench.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.List == nil || len(res.List.Cases) != 4 || res.List.Objects != 30 {
		t.Fatalf("list result %s", out)
	}
	modes := map[string]bool{}
	for _, c := range res.List.Cases {
		modes[c.RVMode] = true
		if !c.LimitHonoured || c.FullList.P50Ms <= 0 {
			t.Errorf("case %+v", c)
		}
	}
	if !modes[""] || !modes["0"] {
		t.Errorf(`rv modes %v: "unset" must become ""`, modes)
	}
	for _, f := range []string{"index.html", "list-latency.png", "list-page-latency.svg"} {
		if _, err := os.Stat(filepath.Join(reportDir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestBenchQueueCommandTable(t *testing.T) {
	defer verifyNoLeaks(t)
	out := runRoot(t, "bench", "queue", "--keys", "200", "--queued", "2000")
	for _, want := range []string{"WORKQUEUE", "listwatch", "client-go", "adds/s"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchInformerBinary builds the real binary and runs "bench
// informer", which re-executes it as "bench informer-child" once per
// implementation; "--updates 0" runs no burst.
func TestBenchInformerBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the listwatch command as a process")
	}
	for _, tc := range []struct {
		updates string
		impls   []string
	}{
		{"10", []string{bench.ImplListwatchTyped, bench.ImplSeedIndexer}},
		{"0", []string{bench.ImplListwatchTyped}},
	} {
		t.Run("updates="+tc.updates, func(t *testing.T) {
			dir := t.TempDir()
			bin := commandPath(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "bench", "informer", "--data-dir", filepath.Join(dir, "data"),
				"--objects", "40", "--impls", strings.Join(tc.impls, ","), "--updates", tc.updates, "--json")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			if klogLine := regexp.MustCompile(`(?m)^[IWEF]\d{4} `); klogLine.Match(stderr.Bytes()) {
				t.Errorf("the embedded server's klog lines reached stderr:\n%s", stderr.String())
			}
			var res bench.Result
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatalf("%v\n%s", err, stdout.String())
			}
			if res.Informer == nil || len(res.Informer.Runs) != len(tc.impls) {
				t.Fatalf("informer result %s", stdout.String())
			}
			for _, run := range res.Informer.Runs {
				if run.Objects != 40 || run.SyncMs <= 0 || run.PeakRSSBytes == 0 || run.HeapAfterSyncBytes == 0 {
					t.Errorf("run %+v", run)
				}
				if burst := tc.updates != "0"; burst != (run.EventsPerSec > 0) || strconv.Itoa(run.Updates) != tc.updates {
					t.Errorf("--updates %s: run with %d updates at %.0f events/s", tc.updates, run.Updates, run.EventsPerSec)
				}
			}
		})
	}
}

func TestBenchShow(t *testing.T) {
	dir := t.TempDir()
	res := bench.Result{Schema: bench.SchemaVersion, NumCPU: 2, Queue: &bench.QueueResult{Producers: 8, Workers: 8,
		Impls: []bench.QueueStats{{Impl: "listwatch", AddsPerSec: 123456}}}}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := runRoot(t, "bench", "show", good, "--report", filepath.Join(dir, "report"))
	if !bytes.Contains(out, []byte("123456")) {
		t.Errorf("show printed:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "report", "queue-throughput.png")); err != nil {
		t.Error(err)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema":"other/v9"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	root := newRootCommand()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"bench", "show", bad})
	if err := root.Execute(); err == nil {
		t.Fatal("show accepted a result of another schema")
	}
}
