package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/klog/v2"
)

// childEnv, when set to "1", turns the test binary into an informer child:
// the informer tests re-execute this binary rather than building the
// listwatch command.
const childEnv = "LISTWATCH_BENCH_INFORMER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		o, err := ParseChildArgs(os.Args[1:])
		if err == nil {
			err = RunInformerChild(context.Background(), o, os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// klog's logger is the process's, read by the embedded servers' kube
	// controllers: set once, before any of them starts, as the listwatch
	// command does.
	klog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m,
		// klog's flush daemon, started by client-go's init.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}
