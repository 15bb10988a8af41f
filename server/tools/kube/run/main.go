// Command run starts a real kube-apiserver (see
// internal/testsupport/kubeapiserver) in the foreground for manual use and
// for server/tools/kube/bench.sh: it prints the admin kubeconfig's path, then
// serves until SIGINT or SIGTERM and stops the server and its etcd.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

func main() {
	dir := flag.String("dir", "", "working directory (default: a temporary directory, removed on exit)")
	readyFile := flag.String("ready-file", "", "once ready, write KUBECONFIG=, KUBE_APISERVER_PID= and KUBE_APISERVER_URL= lines to this file")
	flag.Parse()
	if err := run(*dir, *readyFile, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(1)
	}
}

func run(dir, readyFile string, extra []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := kubeapiserver.Start(ctx, kubeapiserver.Options{Dir: dir, ExtraArgs: extra})
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(os.Stderr, "etcd started in %v; kube-apiserver (pid %d) ready in %v at %s\nlog: %s\n",
		s.EtcdStartupTime.Round(1e6), s.PID, s.StartupTime.Round(1e6), s.URL, s.LogPath)
	fmt.Println(s.KubeconfigPath)
	if readyFile != "" {
		tmp := readyFile + ".tmp"
		body := fmt.Sprintf("KUBECONFIG=%s\nKUBE_APISERVER_PID=%d\nKUBE_APISERVER_URL=%s\n", s.KubeconfigPath, s.PID, s.URL)
		if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Clean(readyFile)); err != nil {
			return err
		}
	}
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping")
	return s.Close()
}
