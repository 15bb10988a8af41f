package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// Write clients: listwatch's generic client (JSON bodies) and client-go's
// typed clientset at its defaults (protobuf bodies for built-in kinds,
// which is what nearly every controller sends).
const (
	WriteClientListwatch = "listwatch"
	WriteClientClientGo  = "client-go"
)

// WriteClients are the clients "bench write" knows, in the order it runs them.
var WriteClients = []string{WriteClientListwatch, WriteClientClientGo}

// WriteOptions configure "bench write".
type WriteOptions struct {
	// Writes is how many objects each client creates, then updates once
	// each, then deletes; default 2000.
	Writes int
	// Workers is how many requests run at once; default 16.
	Workers int
	// Clients run one after the other; default WriteClients.
	Clients []string
	// Progress, when set, receives progress lines or a bar.
	Progress func(label string, total int) *Progress
}

// WriteResult is the output of "bench write": per client, the rate and
// latency of creates, updates and deletes of ~1 KiB ConfigMaps, and the
// server CPU they cost.
type WriteResult struct {
	Resource  string      `json:"resource"`
	Namespace string      `json:"namespace"`
	Workers   int         `json:"workers"`
	Cases     []WriteCase `json:"cases"`
}

// WriteCase is one (client, operation) of "bench write".
type WriteCase struct {
	Client string `json:"client"`
	// Op is create, update or delete.
	Op         string  `json:"op"`
	Ops        int     `json:"ops"`
	DurationMs float64 `json:"durationMs"`
	PerSec     float64 `json:"perSec"`
	Latency    Latency `json:"latency"`
	// ServerCPUMsPerOp is the server's CPU time per operation, when the
	// server's process is known (an embedded server, or --server-pid,
	// plus --store-pid for a separate etcd); ServerCPUScope says what it
	// covers: "process" (embedded: this process, client included), "pid".
	ServerCPUMsPerOp float64 `json:"serverCPUMsPerOp,omitempty"`
	ServerCPUScope   string  `json:"serverCPUScope,omitempty"`
}

// writer is one client's create, update and delete of the i-th object.
type writer struct {
	create, update, remove func(ctx context.Context, i int) error
}

// RunWrite creates, updates and deletes opts.Writes ConfigMaps in the
// fixture's namespace with each client in turn and times each phase.
func RunWrite(ctx context.Context, t *Target, f *Fixture, opts WriteOptions) (*WriteResult, error) {
	if opts.Writes <= 0 {
		opts.Writes = 2000
	}
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	if len(opts.Clients) == 0 {
		opts.Clients = WriteClients
	}
	res := &WriteResult{Resource: configMapsGVR.Resource, Namespace: f.Namespace, Workers: opts.Workers}
	// One run's names never meet another's, even with --keep.
	prefix := "write-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + "-"
	for _, name := range opts.Clients {
		w, err := newWriter(t, f.Namespace, prefix+name+"-", name)
		if err != nil {
			return nil, err
		}
		for _, op := range []struct {
			name string
			fn   func(context.Context, int) error
		}{{"create", w.create}, {"update", w.update}, {"delete", w.remove}} {
			c, err := timeWrites(ctx, t, opts, name+" "+op.name, op.fn)
			if err != nil {
				return nil, err
			}
			c.Client, c.Op = name, op.name
			res.Cases = append(res.Cases, c)
		}
	}
	return res, nil
}

// timeWrites runs fn for every index on opts.Workers goroutines and
// measures rate, latency and the server's CPU.
func timeWrites(ctx context.Context, t *Target, opts WriteOptions, label string, fn func(context.Context, int) error) (WriteCase, error) {
	var prog *Progress
	if opts.Progress != nil {
		prog = opts.Progress(label, opts.Writes)
	}
	defer prog.Finish()
	lat := make([]time.Duration, opts.Writes)
	cpu0, scope := serverCPU(t)
	start := time.Now()
	err := parallel(ctx, opts.Workers, 0, opts.Writes, func(ctx context.Context, i int) error {
		t0 := time.Now()
		if err := fn(ctx, i); err != nil {
			return fmt.Errorf("bench: write: %s %d: %w", label, i, err)
		}
		lat[i] = time.Since(t0)
		prog.Add(1)
		return nil
	})
	if err != nil {
		return WriteCase{}, err
	}
	d := time.Since(start)
	c := WriteCase{Ops: opts.Writes, DurationMs: ms(d), PerSec: float64(opts.Writes) / d.Seconds(), Latency: Summarize(lat)}
	if cpu1, _ := serverCPU(t); scope != "" {
		c.ServerCPUMsPerOp, c.ServerCPUScope = ms(cpu1-cpu0)/float64(opts.Writes), scope
	}
	return c, nil
}

func newWriter(t *Target, ns, prefix, name string) (*writer, error) {
	switch name {
	case WriteClientListwatch:
		cms := client.NewResource[*corev1.ConfigMap](t.Client, configMapsGVR).Namespace(ns)
		return configMapWriter(ns, prefix,
			func(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) { return cms.Create(ctx, cm) },
			func(ctx context.Context, cm *corev1.ConfigMap) error { _, err := cms.Update(ctx, cm); return err },
			func(ctx context.Context, name string) error {
				_, err := cms.Delete(ctx, name, wire.DeleteOptions{})
				return err
			}), nil
	case WriteClientClientGo:
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: t.KubeconfigPath},
			&clientcmd.ConfigOverrides{CurrentContext: t.Context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("bench: write: client-go config: %w", err)
		}
		cfg.QPS, cfg.Burst = -1, 0 // measure the server, not client-go's token bucket
		cfg.UserAgent = "listwatch-bench"
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("bench: write: client-go: %w", err)
		}
		cms := cs.CoreV1().ConfigMaps(ns)
		return configMapWriter(ns, prefix,
			func(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
				return cms.Create(ctx, cm, metav1.CreateOptions{})
			},
			func(ctx context.Context, cm *corev1.ConfigMap) error {
				_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
				return err
			},
			func(ctx context.Context, name string) error { return cms.Delete(ctx, name, metav1.DeleteOptions{}) }), nil
	}
	return nil, fmt.Errorf("%w: write client %q (want one of %v)", ErrUsage, name, WriteClients)
}

// configMapWriter writes the i-th ConfigMap, named prefix + i, with one
// client's calls: the update changes the object the create returned.
func configMapWriter(ns, prefix string,
	create func(context.Context, *corev1.ConfigMap) (*corev1.ConfigMap, error),
	update func(context.Context, *corev1.ConfigMap) error,
	remove func(context.Context, string) error,
) *writer {
	objName := func(i int) string { return fmt.Sprintf("%s%07d", prefix, i) }
	var mu sync.Mutex
	got := map[int]*corev1.ConfigMap{}
	return &writer{
		create: func(ctx context.Context, i int) error {
			cm, err := create(ctx, newConfigMap(ns, objName(i)))
			if err == nil {
				mu.Lock()
				got[i] = cm
				mu.Unlock()
			}
			return err
		},
		update: func(ctx context.Context, i int) error {
			mu.Lock()
			cm := got[i]
			mu.Unlock()
			cm.Data = map[string]string{"payload": payload, "updated": "true"}
			return update(ctx, cm)
		},
		remove: func(ctx context.Context, i int) error { return remove(ctx, objName(i)) },
	}
}
