package bench

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// WriteTable prints r's sections as aligned text tables.
func WriteTable(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	server := r.Target.Host
	if r.Target.Embedded {
		server = "embedded listwatch " + server
	}
	if r.Target.ServerVersion != "" {
		server += " (" + r.Target.ServerVersion + ")"
	}
	fmt.Fprintf(w, "server: %s; %d CPUs\n", server, r.NumCPU)
	if l := r.List; l != nil {
		enc := l.Encoding
		if enc == "" {
			enc = "json"
		}
		fmt.Fprintf(w, "\nLIST %s in %s: %d objects, %d repetitions, %s\n", l.Resource, l.Namespace, l.Objects, l.Repeat, enc)
		p("limit\tRV\tpages\titems\tMiB/list\tpage p50 ms\tpage p99 ms\tlist p50 ms\tlist p99 ms\tmax page\tlimit honoured\t\n")
		for _, c := range l.Cases {
			p("%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%s\t\n", pageSizeLabel(c.PageSize), rvLabel(c.RVMode),
				c.PagesPerList, c.ItemsPerList, float64(c.BytesPerList)/(1<<20), c.Page.P50Ms, c.Page.P99Ms,
				c.FullList.P50Ms, c.FullList.P99Ms, c.MaxPageItems, yesNo(c.LimitHonoured))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if inf := r.Informer; inf != nil {
		fmt.Fprintf(w, "\nINFORMER (one child process each) in %s\n", inf.Namespace)
		p("impl\tN\tsync ms\theap after sync\tRSS after sync\tpeak RSS\tupdates\tevents/s\twrite ms\t\n")
		for _, run := range inf.Runs {
			p("%s\t%d\t%.0f\t%s\t%s\t%s\t%d\t%.0f\t%.0f\t\n", run.Impl, run.Objects, run.SyncMs, humanBytes(run.HeapAfterSyncBytes),
				humanBytes(run.RSSAfterSyncBytes), humanBytes(run.PeakRSSBytes), run.Updates, run.EventsPerSec, run.WriteMs)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if wr := r.Watch; wr != nil {
		fmt.Fprintf(w, "\nWATCH fan-out in %s: %d watchers × %d writes\n", wr.Namespace, wr.Watchers, wr.Writes)
		p("delivered\tlag p50 ms\tlag p90 ms\tlag p99 ms\tlag max ms\tduration ms\tserver CPU ms\tCPU scope\t\n")
		p("%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%.0f\t%s\t\n", wr.Delivered, wr.Lag.P50Ms, wr.Lag.P90Ms, wr.Lag.P99Ms, wr.Lag.MaxMs,
			wr.DurationMs, wr.ServerCPUMs, orDash(wr.ServerCPUScope))
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if wr := r.Write; wr != nil {
		fmt.Fprintf(w, "\nWRITES of %s in %s, %d at once\n", wr.Resource, wr.Namespace, wr.Workers)
		p("client\top\tops\tops/s\tp50 ms\tp99 ms\tserver CPU ms/op\tCPU scope\t\n")
		for _, c := range wr.Cases {
			p("%s\t%s\t%d\t%.0f\t%.2f\t%.2f\t%.3f\t%s\t\n", c.Client, c.Op, c.Ops, c.PerSec, c.Latency.P50Ms, c.Latency.P99Ms,
				c.ServerCPUMsPerOp, orDash(c.ServerCPUScope))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if q := r.Queue; q != nil {
		fmt.Fprintf(w, "\nWORKQUEUE: %d producers, %d workers, %d keys, %d adds; Add latency with %d queued\n",
			q.Producers, q.Workers, q.Keys, q.Adds, q.Queued)
		p("impl\tadds/s\tprocessed\tAdd p50 µs\tAdd p99 µs\tAdd max µs\t\n")
		for _, s := range q.Impls {
			p("%s\t%.0f\t%d\t%.2f\t%.2f\t%.0f\t\n", s.Impl, s.AddsPerSec, s.Processed,
				s.AddLatency.P50Ms*1000, s.AddLatency.P99Ms*1000, s.AddLatency.MaxMs*1000)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func pageSizeLabel(n int64) string {
	if n == 0 {
		return "none"
	}
	return strconv.FormatInt(n, 10)
}

func rvLabel(mode string) string {
	if mode == "" {
		return "unset"
	}
	return strconv.Quote(mode)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
