package report

import (
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/listwatch/listwatch/server/bench"
)

func sampleResult() *bench.Result {
	lat := func(p50 float64) bench.Latency {
		return bench.Latency{Count: 3, P50Ms: p50, P90Ms: p50 * 1.5, P99Ms: p50 * 2, MaxMs: p50 * 2, MeanMs: p50}
	}
	r := &bench.Result{
		Schema: bench.SchemaVersion, Started: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), NumCPU: 2, GoMaxProcs: 2,
		Target: bench.TargetInfo{Embedded: true, Host: "https://127.0.0.1:1", ServerVersion: "v1.37.2"},
		List: &bench.ListResult{Resource: "configmaps", Namespace: "b", Objects: 1000, Repeat: 3, Cases: []bench.ListCase{
			{PageSize: 50, RVMode: "", Page: lat(2), FullList: lat(40), PagesPerList: 20, ItemsPerList: 1000, LimitHonoured: true},
			{PageSize: 50, RVMode: "0", Page: lat(30), FullList: lat(30), PagesPerList: 1, ItemsPerList: 1000, LimitHonoured: false},
			{PageSize: 0, RVMode: "", Page: lat(25), FullList: lat(25), PagesPerList: 1, ItemsPerList: 1000, LimitHonoured: true},
			{PageSize: 0, RVMode: "0", Page: lat(20), FullList: lat(20), PagesPerList: 1, ItemsPerList: 1000, LimitHonoured: true},
		}},
		Watch: &bench.WatchResult{Watchers: 2, Writes: 10, Delivered: 20, Lag: lat(1)},
		Queue: &bench.QueueResult{Producers: 8, Workers: 8, Keys: 10, Adds: 100, Queued: 1000, Impls: []bench.QueueStats{
			{Impl: "listwatch", AddsPerSec: 1e6, AddLatency: lat(0.001)}, {Impl: "client-go", AddsPerSec: 5e5, AddLatency: lat(0.002)},
		}},
		Informer: &bench.InformerResult{},
	}
	for _, n := range []int{100, 1000} {
		for i, impl := range bench.Impls {
			r.Informer.Runs = append(r.Informer.Runs, bench.InformerRun{Impl: impl, Objects: n, SyncMs: float64(n + 10*i),
				HeapAfterSyncBytes: uint64(n) << 12, PeakRSSBytes: uint64(n) << 16, Updates: 10, EventsPerSec: 500})
		}
	}
	return r
}

// TestWrite renders every chart, then reads the report back as a browser
// would: the HTML parses, each chart is a figure holding an inline SVG,
// nothing loads a script or a remote resource, and every PNG decodes at
// the chart's size.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	ids, err := Write(dir, sampleResult())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"list-latency", "list-page-latency", "informer-sync", "informer-heap", "informer-peak-rss",
		"informer-events", "watch-lag", "queue-throughput", "queue-add-latency"}
	if !slices.Equal(ids, want) {
		t.Fatalf("charts %v, want %v", ids, want)
	}

	f, err := os.Open(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	figures := map[string]bool{} // id -> holds an <svg>
	var walk func(n *html.Node, figure string)
	walk = func(n *html.Node, figure string) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "figure":
				figure = attr(n, "id")
				figures[figure] = false
			case "svg":
				if figure != "" {
					figures[figure] = true
				}
			case "script", "link", "iframe":
				t.Errorf("report has a <%s> element", n.Data)
			case "img":
				if src := attr(n, "src"); strings.Contains(src, "://") {
					t.Errorf("report loads %s", src)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, figure)
		}
	}
	walk(doc, "")
	for _, id := range want {
		hasSVG, ok := figures["chart-"+id]
		if !ok || !hasSVG {
			t.Errorf("figure chart-%s: present %v, has svg %v", id, ok, hasSVG)
		}
	}

	for _, id := range want {
		pf, err := os.Open(filepath.Join(dir, id+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(pf)
		pf.Close()
		if err != nil {
			t.Fatalf("%s.png: %v", id, err)
		}
		// 8×4 inches at gonum's default 96 dpi for PNG, give or take.
		if b := img.Bounds(); b.Dx() < 400 || b.Dx() > 2000 || b.Dy() < 200 || b.Dy() > 1000 || b.Dx() < b.Dy() {
			t.Errorf("%s.png is %v", id, b)
		}
		if _, err := os.Stat(filepath.Join(dir, id+".svg")); err != nil {
			t.Error(err)
		}
	}
}

// TestChartsFollowSections: only the sections present are charted.
func TestChartsFollowSections(t *testing.T) {
	r := sampleResult()
	r.List, r.Informer, r.Watch = nil, nil, nil
	var ids []string
	for _, c := range charts(r) {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"queue-throughput", "queue-add-latency"}) {
		t.Fatalf("charts %v", ids)
	}
	if len(charts(&bench.Result{})) != 0 {
		t.Fatal("charts for an empty result")
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
