// Package report turns a bench.Result into a self-contained HTML page with
// charts: index.html embeds every chart as inline SVG (no scripts, no
// external resources), and a PNG copy of each chart sits beside it for
// slides and issues.
//
// Charts drawn, when their section is present in the Result:
//
//   - list-latency, list-page-latency: full-list and per-page p50 LIST
//     latency by page size, one bar per resourceVersion mode;
//   - informer-sync, informer-heap, informer-peak-rss, informer-events:
//     per implementation, one bar per object count, listwatch's and
//     client-go's side by side;
//   - watch-lag: delivery-lag percentiles of the fan-out;
//   - queue-throughput, queue-add-latency: listwatch's workqueue beside
//     client-go's.
//
// Each chart is written as ID.png and ID.svg; in index.html it is a
// <figure id="chart-ID">.
package report
