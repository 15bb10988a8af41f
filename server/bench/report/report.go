package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/listwatch/listwatch/server/bench"
)

// Write renders r into dir (created if missing): index.html and, per
// chart, ID.png and ID.svg. It returns the chart IDs written.
func Write(dir string, r *bench.Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cs := charts(r)
	page := pageData{Result: r}
	var table bytes.Buffer
	if err := bench.WriteTable(&table, r); err != nil {
		return nil, err
	}
	page.Table = table.String()
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		svg, err := c.render(dir)
		if err != nil {
			return nil, err
		}
		page.Charts = append(page.Charts, figure{ID: c.ID, Title: c.Title, SVG: template.HTML(svg)}) //nolint:gosec // our own renderer's SVG
		ids = append(ids, c.ID)
	}
	var html bytes.Buffer
	if err := pageTemplate.Execute(&html, page); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return ids, os.WriteFile(filepath.Join(dir, "index.html"), html.Bytes(), 0o644)
}

type pageData struct {
	Result *bench.Result
	Table  string
	Charts []figure
}

type figure struct {
	ID, Title string
	SVG       template.HTML
}

var pageTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>listwatch bench</title>
<style>
body { font-family: sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
figure { margin: 2rem 0; }
figure svg { max-width: 100%; height: auto; }
pre { background: #f6f6f6; padding: 1rem; overflow-x: auto; }
</style>
</head>
<body>
<h1>listwatch bench</h1>
<p>Server: {{if .Result.Target.Embedded}}embedded listwatch {{end}}{{.Result.Target.Host}}
{{with .Result.Target.ServerVersion}}({{.}}){{end}};
run started {{.Result.Started.Format "2006-01-02 15:04:05 MST"}} on {{.Result.NumCPU}} CPUs.
Absolute figures are for that machine; compare implementations by their ratios.</p>
{{range .Charts}}
<figure id="chart-{{.ID}}" class="chart">
{{.SVG}}
<figcaption>{{.Title}} — <a href="{{.ID}}.png">PNG</a>, <a href="{{.ID}}.svg">SVG</a></figcaption>
</figure>
{{end}}
<h2>Figures</h2>
<pre>{{.Table}}</pre>
<p>Machine-readable: <code>listwatch bench … --json</code> (schema {{.Result.Schema}}).</p>
</body>
</html>
`))

// charts lists the charts r's sections call for.
func charts(r *bench.Result) []chart {
	var cs []chart
	if l := r.List; l != nil && len(l.Cases) > 0 {
		var sizes []int64
		var modes []string
		for _, c := range l.Cases {
			if !slices.Contains(sizes, c.PageSize) {
				sizes = append(sizes, c.PageSize)
			}
			if !slices.Contains(modes, c.RVMode) {
				modes = append(modes, c.RVMode)
			}
		}
		cats := make([]string, len(sizes))
		for i, s := range sizes {
			cats[i] = "limit " + strconv.FormatInt(s, 10)
			if s == 0 {
				cats[i] = "unpaged"
			}
		}
		full := chart{ID: "list-latency", Title: fmt.Sprintf("Full LIST latency (p50) by page size, %d objects", l.Objects), YLabel: "ms", Categories: cats}
		page := chart{ID: "list-page-latency", Title: "LIST page request latency (p50) by page size", YLabel: "ms", Categories: cats}
		for _, m := range modes {
			name := "resourceVersion unset"
			if m != "" {
				name = "resourceVersion=" + strconv.Quote(m)
			}
			fs, ps := series{Name: name}, series{Name: name}
			for _, s := range sizes {
				var f, p float64
				for _, c := range l.Cases {
					if c.PageSize == s && c.RVMode == m {
						f, p = c.FullList.P50Ms, c.Page.P50Ms
					}
				}
				fs.Values = append(fs.Values, f)
				ps.Values = append(ps.Values, p)
			}
			full.Series = append(full.Series, fs)
			page.Series = append(page.Series, ps)
		}
		cs = append(cs, full, page)
	}
	if inf := r.Informer; inf != nil && len(inf.Runs) > 0 {
		var impls []string
		var sizes []int
		for _, run := range inf.Runs {
			if !slices.Contains(impls, run.Impl) {
				impls = append(impls, run.Impl)
			}
			if !slices.Contains(sizes, run.Objects) {
				sizes = append(sizes, run.Objects)
			}
		}
		slices.Sort(sizes)
		metric := func(id, title, unit string, f func(bench.InformerRun) float64) chart {
			c := chart{ID: id, Title: title, YLabel: unit, Categories: impls}
			for _, n := range sizes {
				s := series{Name: "N=" + strconv.Itoa(n)}
				for _, impl := range impls {
					v := 0.0
					for _, run := range inf.Runs {
						if run.Impl == impl && run.Objects == n {
							v = f(run)
						}
					}
					s.Values = append(s.Values, v)
				}
				c.Series = append(c.Series, s)
			}
			return c
		}
		mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
		cs = append(cs,
			metric("informer-sync", "Informer initial sync time by object count", "ms", func(r bench.InformerRun) float64 { return r.SyncMs }),
			metric("informer-heap", "Live heap after sync", "MiB", func(r bench.InformerRun) float64 { return mib(r.HeapAfterSyncBytes) }),
			metric("informer-peak-rss", "Peak RSS (VmHWM) of the informer process", "MiB", func(r bench.InformerRun) float64 { return mib(r.PeakRSSBytes) }),
			metric("informer-events", "Update events handled per second after sync", "events/s", func(r bench.InformerRun) float64 { return r.EventsPerSec }),
		)
	}
	if w := r.Watch; w != nil {
		cs = append(cs, chart{
			ID: "watch-lag", Title: fmt.Sprintf("Watch delivery lag, %d watchers × %d writes", w.Watchers, w.Writes), YLabel: "ms",
			Categories: []string{"p50", "p90", "p99", "max"},
			Series:     []series{{Name: "lag", Values: []float64{w.Lag.P50Ms, w.Lag.P90Ms, w.Lag.P99Ms, w.Lag.MaxMs}}},
		})
	}
	if q := r.Queue; q != nil && len(q.Impls) > 0 {
		impls := slices.Clone(q.Impls)
		slices.SortStableFunc(impls, func(a, b bench.QueueStats) int { return cmp.Compare(a.Impl, b.Impl) })
		var names []string
		thr := series{Name: "adds/s"}
		p50, p99 := series{Name: "p50"}, series{Name: "p99"}
		for _, s := range impls {
			names = append(names, s.Impl)
			thr.Values = append(thr.Values, s.AddsPerSec)
			p50.Values = append(p50.Values, s.AddLatency.P50Ms*1000)
			p99.Values = append(p99.Values, s.AddLatency.P99Ms*1000)
		}
		cs = append(cs,
			chart{ID: "queue-throughput", Title: fmt.Sprintf("Workqueue throughput, %d producers × %d workers", q.Producers, q.Workers), YLabel: "adds/s", Categories: names, Series: []series{thr}},
			chart{ID: "queue-add-latency", Title: fmt.Sprintf("Add latency with %d items queued", q.Queued), YLabel: "µs", Categories: names, Series: []series{p50, p99}},
		)
	}
	return cs
}
