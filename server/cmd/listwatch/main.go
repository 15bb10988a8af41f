// Command listwatch is the Kubernetes list-watch machinery as one binary:
// a compatible API server (serve), an informer that prints what it sees
// (watch), a measuring tool (bench) and a self-contained demonstration
// (demo).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "listwatch:", err)
		stop()
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "listwatch",
		Short:         "The Kubernetes list-watch machinery: server, informer, bench",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand())
	root.AddCommand(newBenchCommand())
	root.AddCommand(newWatchCommand())
	root.AddCommand(newDemoCommand())
	return root
}
