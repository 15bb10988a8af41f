package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
	"github.com/listwatch/listwatch/wire"
)

// startServer runs a listwatch server on a free 127.0.0.1 port for the
// test and returns its kubeconfig path.
func startServer(t *testing.T) string {
	t.Helper()
	return apiservertest.Start(t, "").KubeconfigPath()
}

// TestRunAgainstKubeconfig drives every benchmark through a kubeconfig,
// as against a real cluster, with the informer children re-executing
// this test binary, and checks the JSON and that bench cleaned up.
func TestRunAgainstKubeconfig(t *testing.T) {
	kubeconfig := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{
		Target:    TargetOptions{Kubeconfig: kubeconfig},
		Namespace: "bench-test",
		Objects:   []int{20, 50},
		List:      &ListOptions{PageSizes: []int64{10, 0}, Repeat: 2},
		Informer: &InformerOptions{
			Updates:      15,
			ChildCommand: []string{os.Args[0]},
			ChildEnv:     []string{childEnv + "=1"},
			ChildTimeout: 2 * time.Minute,
		},
		Watch:    &WatchOptions{Watchers: 2, Writes: 25},
		Write:    &WriteOptions{Writes: 30, Workers: 4},
		Queue:    &QueueOptions{Keys: 500, AddsPerKey: 4, Queued: 5000, LatencySamples: 1000},
		Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Check through the JSON field names: they are the stable schema.
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string `json:"schema"`
		Target struct {
			Embedded bool   `json:"embedded"`
			Host     string `json:"host"`
		} `json:"target"`
		List struct {
			Objects int `json:"objects"`
			Cases   []struct {
				PageSize      int64  `json:"pageSize"`
				RVMode        string `json:"rvMode"`
				PagesPerList  int    `json:"pagesPerList"`
				ItemsPerList  int    `json:"itemsPerList"`
				BytesPerList  int64  `json:"bytesPerList"`
				MaxPageItems  int    `json:"maxPageItems"`
				LimitHonoured bool   `json:"limitHonoured"`
				Page          struct {
					Count int     `json:"count"`
					P50Ms float64 `json:"p50Ms"`
				} `json:"page"`
				FullList struct {
					Count int     `json:"count"`
					P99Ms float64 `json:"p99Ms"`
				} `json:"fullList"`
			} `json:"cases"`
		} `json:"list"`
		Informer struct {
			Runs []InformerRun `json:"runs"`
		} `json:"informer"`
		Watch struct {
			Delivered   int     `json:"delivered"`
			Lag         Latency `json:"lag"`
			ServerCPUMs float64 `json:"serverCPUMs"`
		} `json:"watch"`
		Queue struct {
			Impls []QueueStats `json:"impls"`
		} `json:"queue"`
		Write WriteResult `json:"write"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != SchemaVersion || doc.Target.Embedded || !strings.HasPrefix(doc.Target.Host, "https://127.0.0.1:") {
		t.Errorf("header: %s", data[:min(len(data), 300)])
	}

	if doc.List.Objects != 50 || len(doc.List.Cases) != 4 {
		t.Fatalf("list: %d objects, %d cases; want 50 and 4", doc.List.Objects, len(doc.List.Cases))
	}
	for _, c := range doc.List.Cases {
		wantPages := 1
		if c.PageSize == 10 {
			wantPages = 5
		}
		if !c.LimitHonoured || c.ItemsPerList != 50 || c.PagesPerList != wantPages || c.BytesPerList < 50*1024 {
			t.Errorf("list case %+v: want limit honoured, 50 items in %d pages, ≥50 KiB", c, wantPages)
		}
		if c.Page.Count != 2*wantPages || c.Page.P50Ms <= 0 || c.FullList.Count != 2 || c.FullList.P99Ms <= 0 {
			t.Errorf("list case latencies %+v", c)
		}
	}

	if len(doc.Informer.Runs) != 2*len(Impls) {
		t.Fatalf("informer: %d runs, want %d", len(doc.Informer.Runs), 2*len(Impls))
	}
	for i, run := range doc.Informer.Runs {
		wantN := 20
		if i >= len(Impls) {
			wantN = 50
		}
		if run.Impl != Impls[i%len(Impls)] || run.Objects != wantN || run.Updates != 15 || run.Error != "" {
			t.Errorf("informer run %d: %+v", i, run)
		}
		if run.SyncMs <= 0 || run.HeapAfterSyncBytes == 0 || run.RSSAfterSyncBytes == 0 ||
			run.PeakRSSBytes < run.RSSAfterSyncBytes || run.EventsPerSec <= 0 || run.WriteMs <= 0 {
			t.Errorf("informer run %d has empty measurements: %+v", i, run)
		}
	}

	if doc.Watch.Delivered != 2*25 || doc.Watch.Lag.Count != 50 || doc.Watch.Lag.MaxMs <= 0 {
		t.Errorf("watch: %+v", doc.Watch)
	}
	if doc.Watch.ServerCPUMs != 0 {
		t.Errorf("watch: server CPU %v for a remote server without --server-pid", doc.Watch.ServerCPUMs)
	}

	if len(doc.Write.Cases) != 3*len(WriteClients) {
		t.Fatalf("write: %d cases, want %d", len(doc.Write.Cases), 3*len(WriteClients))
	}
	for i, c := range doc.Write.Cases {
		if c.Client != WriteClients[i/3] || c.Op != []string{"create", "update", "delete"}[i%3] || c.Ops != 30 ||
			c.PerSec <= 0 || c.Latency.Count != 30 || c.Latency.MaxMs <= 0 || c.ServerCPUScope != "" {
			t.Errorf("write case %d: %+v", i, c)
		}
	}

	if len(doc.Queue.Impls) != 2 || doc.Queue.Impls[0].Impl != "listwatch" || doc.Queue.Impls[1].Impl != "client-go" {
		t.Fatalf("queue: %+v", doc.Queue)
	}
	for _, q := range doc.Queue.Impls {
		// Every key is processed at least once; duplicates merge.
		if q.AddsPerSec <= 0 || q.Processed < 500 || q.Processed > 2000 || q.AddLatency.Count != 1000 {
			t.Errorf("queue %s: %+v", q.Impl, q)
		}
	}

	if !strings.Contains(progress.String(), "creating 20 objects") {
		t.Errorf("no progress lines: %q", progress.String())
	}
	var table bytes.Buffer
	if err := WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LIST configmaps", "INFORMER", ImplSeedFactory, "WATCH fan-out", "WORKQUEUE", "client-go"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	// Cleanup: the namespace bench created is gone, and so are its objects.
	cfg, err := client.LoadKubeconfig(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	cms, err := client.NewResource[*corev1.ConfigMap](c, configMapsGVR).Namespace("bench-test").List(ctx, wire.ListOptions{})
	if err == nil && len(cms.Items) != 0 {
		t.Errorf("%d bench ConfigMaps left behind", len(cms.Items))
	}
	if _, err := client.NewResource[*corev1.Namespace](c, namespacesGVR).Get(ctx, "bench-test"); !client.IsNotFound(err) {
		// A namespace being finalized still reads back; it must at
		// least be terminating.
		ns, gerr := client.NewResource[*corev1.Namespace](c, namespacesGVR).Get(ctx, "bench-test")
		if gerr != nil || ns.DeletionTimestamp == nil {
			t.Errorf("namespace not deleted: %v", err)
		}
	}
}

// TestRunEmbeddedList runs the list benchmark with no kubeconfig, in JSON
// and in protobuf: bench starts and stops its own server.
func TestRunEmbeddedList(t *testing.T) {
	for _, enc := range []string{"json", "protobuf"} {
		t.Run(enc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := Run(ctx, Options{
				Target:  TargetOptions{DataDir: t.TempDir()},
				Objects: []int{30},
				List:    &ListOptions{PageSizes: []int64{7}, RVModes: []string{"0"}, Repeat: 1, Protobuf: enc == "protobuf"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Target.Embedded || res.List == nil || len(res.List.Cases) != 1 || res.List.Encoding != enc {
				t.Fatalf("result %+v", res)
			}
			c := res.List.Cases[0]
			if !c.LimitHonoured || c.PagesPerList != 5 || c.MaxPageItems != 7 || c.ItemsPerList != 30 {
				t.Fatalf("case %+v: listwatch must honour limit with resourceVersion=0", c)
			}
		})
	}
}

// TestDecodeListPageProtobuf: a protobuf page's items are counted and its
// continue token read, as a JSON page's.
func TestDecodeListPageProtobuf(t *testing.T) {
	remaining := int64(3)
	list := &corev1.ConfigMapList{
		ListMeta: metav1.ListMeta{ResourceVersion: "12", Continue: "next", RemainingItemCount: &remaining},
		Items:    []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
	}
	raw, err := list.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	unknown := &k8sruntime.Unknown{TypeMeta: k8sruntime.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, Raw: raw}
	body, err := unknown.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	page, err := decodeListPage(append([]byte("k8s\x00"), body...))
	if err != nil {
		t.Fatal(err)
	}
	m := page.Metadata
	if len(page.Items) != 2 || m.ResourceVersion != "12" || m.Continue != "next" || m.RemainingItemCount == nil || *m.RemainingItemCount != 3 {
		t.Fatalf("page %+v, metadata %+v", page, m)
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]Options{
		"use-existing with informer": {UseExisting: true, Informer: &InformerOptions{}},
		"zero objects":               {Objects: []int{0}, List: &ListOptions{}},
	} {
		if _, err := Run(ctx, o); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
