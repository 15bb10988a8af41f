package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/demo"
)

func newDemoCommand() *cobra.Command {
	var logLevel string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a server and a small controller, make scripted changes, print what happens",
		Long: `Start an API server with embedded etcd in a temporary directory (removed
at exit), run a controller that mirrors every ConfigMap's data into
<name>-mirror, and make a scripted series of changes: create a ConfigMap,
update it, delete its mirror by hand (the controller restores it), delete it
(the controller deletes the mirror). The informer's events are printed as
'listwatch watch' prints them, with what the controller did, then a summary.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			// The embedded server's Kubernetes libraries log through
			// klog: into the same log, at the same level.
			klog.SetSlogLogger(log.With("component", "k8s.io"))
			return runDemo(cmd.Context(), cmd.OutOrStdout(), log)
		},
	}
	cmd.Flags().StringVar(&logLevel, "log-level", "error", "debug, info, warn or error (logs go to stderr)")
	return cmd
}

func runDemo(ctx context.Context, out io.Writer, log *slog.Logger) (err error) {
	dir, err := os.MkdirTemp("", "listwatch-demo-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()

	// No controllers: the demo's mirror controller would mirror the
	// kube-root-ca.crt the root CA publisher puts in its namespace.
	srv, err := apiserver.New(apiserver.Options{DataDir: dir, Port: -1, Logger: log, Controllers: []string{}})
	if err != nil {
		return err
	}
	srvCtx, stopServer := context.WithCancel(ctx)
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(srvCtx) }()
	// The server stops, and its goroutines exit, before the directory goes.
	defer func() {
		stopServer()
		if srvErr := <-srvDone; srvErr != nil && ctx.Err() == nil {
			err = errors.Join(err, fmt.Errorf("server: %w", srvErr))
		}
	}()
	select {
	case <-srv.Ready():
	case srvErr := <-srvDone:
		srvDone <- srvErr // for the deferred wait, which reports it
		return nil
	case <-ctx.Done():
		return nil // interrupted while starting
	}

	p := &eventPrinter{w: out}
	p.printf("listwatch demo: server at %s (data in %s, removed at exit)\n", srv.URL(), dir)
	cfg, err := client.LoadKubeconfig(srv.KubeconfigPath(), "")
	if err != nil {
		return err
	}
	cfg.Logger = log
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err = demo.WaitReady(readyCtx, c)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}

	stamp := func() string { return time.Now().Format(time.DateTime) }
	sum, err := demo.Run(ctx, demo.Config{
		Client:  c,
		Logger:  log,
		OnEvent: p.print,
		OnReconcile: func(key, action string) {
			p.printf("%s reconcile %s: %s\n", stamp(), key, action)
		},
		OnStep: func(step string) { p.printf("%s --- %s\n", stamp(), step) },
	})
	if err != nil && ctx.Err() != nil {
		return nil // interrupted
	}
	p.printf("%s\n", sum)
	return err
}
