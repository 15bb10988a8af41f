package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/listwatch/listwatch/server/bench"
	"github.com/listwatch/listwatch/server/bench/report"
)

// benchFlags are shared by every bench subcommand.
type benchFlags struct {
	opts      bench.Options
	json      bool
	reportDir string
}

func newBenchCommand() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure LIST paging, informers, watch fan-out and the workqueue against any server",
		Long: `bench measures a Kubernetes-compatible API server — a real kube-apiserver
through --kubeconfig, or an embedded listwatch server when none is given —
and compares listwatch's client side with client-go's in the same run.

Subcommands: list, informer, watch, write, queue, all. Output is a table on
stdout; --json prints one JSON object (schema "` + bench.SchemaVersion + `",
documented in package bench's Result type); --report DIR writes
DIR/index.html with charts and a PNG and SVG of each chart.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.opts.Target.Kubeconfig, "kubeconfig", "", "kubeconfig of the server to measure (default: start an embedded listwatch server)")
	pf.StringVar(&f.opts.Target.Context, "context", "", "kubeconfig context")
	pf.StringVar(&f.opts.Target.DataDir, "data-dir", "", "data directory of the embedded server (default: a temporary directory)")
	pf.IntVar(&f.opts.Target.ServerPID, "server-pid", 0, "pid of a local server process, to report its CPU time (watch, write)")
	pf.IntVar(&f.opts.Target.StorePID, "store-pid", 0, "pid of the server's separate storage process (etcd), whose CPU time is added to --server-pid's")
	pf.StringVar(&f.opts.Namespace, "namespace", "listwatch-bench", "namespace for bench objects")
	pf.IntSliceVar(&f.opts.Objects, "objects", []int{1000}, "object counts (see --fixture); list uses the largest, informer measures each")
	pf.StringVar(&f.opts.Fixture, "fixture", bench.FixtureConfigMaps, "objects to create: configmaps (~1 KiB) or pods (~6 KiB, shaped like a production cluster's)")
	pf.IntVar(&f.opts.CreateWorkers, "create-workers", 16, "concurrent creates while building the fixture")
	pf.BoolVar(&f.opts.Keep, "keep", false, "keep the namespace and objects created")
	pf.BoolVar(&f.json, "json", false, "print the result as JSON instead of a table")
	pf.StringVar(&f.reportDir, "report", "", "write an HTML report with charts into this directory")

	cmd.AddCommand(newBenchListCommand(f), newBenchInformerCommand(f), newBenchWatchCommand(f),
		newBenchQueueCommand(f), newBenchWriteCommand(f), newBenchAllCommand(f), newBenchShowCommand(f), newBenchInformerChildCommand())
	return cmd
}

// run executes the selected benchmarks and prints the result.
func (f *benchFlags) run(cmd *cobra.Command) error {
	if f.opts.Informer != nil {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		f.opts.Informer.ChildCommand = []string{exe, "bench", "informer-child"}
		if f.opts.Informer.Updates <= 0 {
			// --updates 0 asks for no burst, where the options' zero
			// value is their default.
			f.opts.Informer.Updates = -1
		}
		f.opts.Informer.Log = cmd.ErrOrStderr()
	}
	f.opts.Progress = cmd.ErrOrStderr()
	if f.opts.Target.Kubeconfig == "" {
		// The embedded server's Kubernetes libraries log through klog:
		// not klog's own lines on stderr between bench's. Set before the
		// server starts, once (its kube controllers read it from
		// goroutines of their own).
		klog.SetSlogLogger(slog.New(slog.DiscardHandler))
	}
	res, err := bench.Run(cmd.Context(), f.opts)
	if err != nil {
		return err
	}
	return f.print(cmd.OutOrStdout(), cmd.ErrOrStderr(), res)
}

func (f *benchFlags) print(stdout, stderr io.Writer, res *bench.Result) error {
	if f.reportDir != "" {
		if _, err := report.Write(f.reportDir, res); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s/index.html\n", f.reportDir)
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return bench.WriteTable(stdout, res)
}

func addListFlags(cmd *cobra.Command, lo *bench.ListOptions, f *benchFlags) {
	fl := cmd.Flags()
	fl.Int64SliceVar(&lo.PageSizes, "page-sizes", []int64{50, 500, 5000, 0}, "LIST limits to time; 0 = unpaged")
	fl.StringSliceVar(&lo.RVModes, "rv-modes", []string{"unset", "0"}, `resourceVersion of the first page: "unset" or a value such as "0"`)
	fl.BoolVar(&lo.Protobuf, "protobuf", false, "ask for protobuf, as client-go's typed clients do (default JSON)")
	fl.IntVar(&lo.Repeat, "repeat", 3, "full lists per (page size, RV mode)")
	fl.StringVar(&lo.Resource, "resource", "", "core/v1 resource to list (default: the fixture's, configmaps or pods)")
	fl.BoolVar(&f.opts.UseExisting, "use-existing", false, "list the objects already in --namespace instead of creating any")
}

// normalizeRVModes maps the flag's "unset" to the empty resourceVersion.
func normalizeRVModes(lo *bench.ListOptions) {
	for i, m := range lo.RVModes {
		if strings.EqualFold(m, "unset") {
			lo.RVModes[i] = ""
		}
	}
}

func newBenchListCommand(f *benchFlags) *cobra.Command {
	lo := &bench.ListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Time LIST by page size and resourceVersion mode; report whether limit is honoured",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			normalizeRVModes(lo)
			f.opts.List = lo
			return f.run(cmd)
		},
	}
	addListFlags(cmd, lo, f)
	return cmd
}

func addInformerFlags(cmd *cobra.Command, io *bench.InformerOptions) {
	fl := cmd.Flags()
	fl.StringSliceVar(&io.Impls, "impls", bench.Impls, "informer implementations to run")
	fl.IntVar(&io.Updates, "updates", 1000, "update burst applied after each sync (0: none)")
	fl.DurationVar(&io.ChildTimeout, "child-timeout", 0, "bound on each child process (default 10m)")
	fl.BoolVar(&io.Replay, "replay", false, "also run each implementation against a replay of what the server sent it, without update burst: a server that only writes, so about the client's own cost (runs named IMPL@replay)")
	fl.BoolVar(&io.Relist, "relist", false, "after the burst, force one relist (the watch ends with 410 Expired) and measure memory during it")
}

func newBenchInformerCommand(f *benchFlags) *cobra.Command {
	io := &bench.InformerOptions{}
	cmd := &cobra.Command{
		Use:   "informer",
		Short: "Sync time, memory and events/s of listwatch's and client-go's informers, each in its own process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.opts.Informer = io
			return f.run(cmd)
		},
	}
	addInformerFlags(cmd, io)
	return cmd
}

func addWatchFlags(cmd *cobra.Command, wo *bench.WatchOptions) {
	fl := cmd.Flags()
	fl.IntVar(&wo.Watchers, "watchers", 10, "concurrent watchers")
	fl.IntVar(&wo.Writes, "writes", 1000, "objects created while they watch")
}

func newBenchWatchCommand(f *benchFlags) *cobra.Command {
	wo := &bench.WatchOptions{}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Watch fan-out: delivery lag from write acknowledgement to every watcher, and server CPU",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.opts.Watch = wo
			return f.run(cmd)
		},
	}
	addWatchFlags(cmd, wo)
	return cmd
}

func newBenchWriteCommand(f *benchFlags) *cobra.Command {
	wo := &bench.WriteOptions{}
	cmd := &cobra.Command{
		Use:   "write",
		Short: "Creates, updates and deletes per second, and the server CPU each costs, with listwatch's client and client-go's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.opts.Write = wo
			return f.run(cmd)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&wo.Writes, "writes", 2000, "objects each client creates, then updates once each, then deletes")
	fl.IntVar(&wo.Workers, "workers", 16, "requests at once")
	fl.StringSliceVar(&wo.Clients, "clients", bench.WriteClients, "clients to run, in order: listwatch (JSON), client-go (protobuf)")
	return cmd
}

func addQueueFlags(cmd *cobra.Command, qo *bench.QueueOptions) {
	fl := cmd.Flags()
	fl.IntVar(&qo.Keys, "keys", 10_000, "distinct keys in the throughput phase")
	fl.IntVar(&qo.Queued, "queued", 1_000_000, "items queued while Add latency is measured")
}

func newBenchQueueCommand(f *benchFlags) *cobra.Command {
	qo := &bench.QueueOptions{}
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Workqueue throughput and Add latency, listwatch's beside client-go's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.opts.Queue = qo
			return f.run(cmd)
		},
	}
	addQueueFlags(cmd, qo)
	return cmd
}

func newBenchAllCommand(f *benchFlags) *cobra.Command {
	lo, io, wo, qo := &bench.ListOptions{}, &bench.InformerOptions{}, &bench.WatchOptions{}, &bench.QueueOptions{}
	cmd := &cobra.Command{
		Use:   "all",
		Short: "Run list, informer, watch and queue against one server, into one report",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			normalizeRVModes(lo)
			f.opts.List, f.opts.Informer, f.opts.Watch, f.opts.Queue = lo, io, wo, qo
			return f.run(cmd)
		},
	}
	addListFlags(cmd, lo, f)
	addInformerFlags(cmd, io)
	addWatchFlags(cmd, wo)
	addQueueFlags(cmd, qo)
	return cmd
}

// newBenchShowCommand re-renders a saved --json result as a table, JSON
// or report, without measuring anything.
func newBenchShowCommand(f *benchFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show RESULT.json",
		Short: "Print a saved --json result as a table, or render it with --report",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			var res bench.Result
			if err := json.Unmarshal(data, &res); err != nil {
				return fmt.Errorf("bench show: %s: %w", args[0], err)
			}
			if res.Schema != bench.SchemaVersion {
				return fmt.Errorf("bench show: %s has schema %q, want %q", args[0], res.Schema, bench.SchemaVersion)
			}
			return f.print(cmd.OutOrStdout(), cmd.ErrOrStderr(), &res)
		},
	}
}

// newBenchInformerChildCommand is the hidden entry point "bench informer"
// re-executes this binary with, once per implementation, so that each
// informer's memory is measured in a process of its own.
func newBenchInformerChildCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "informer-child",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := bench.ParseChildArgs(args)
			if err != nil {
				return err
			}
			return bench.RunInformerChild(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
}
