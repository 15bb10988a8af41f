package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// BenchLabel marks every object bench creates, so cleanup deletes only
// those (and --use-existing lists are never touched).
const BenchLabel = "listwatch.io/bench"

var (
	configMapsGVR = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	podsGVR       = client.GroupVersionResource{Version: "v1", Resource: "pods"}
	namespacesGVR = client.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// Fixture is a bench namespace holding objects named bench-0000000,
// bench-0000001, …: ConfigMaps of about 1 KiB each (Kind
// FixtureConfigMaps, the default) or production-shaped pods of about
// 6 KiB (FixturePods, see ProductionPod). Grow adds objects; Cleanup deletes
// what this Fixture created.
type Fixture struct {
	Namespace string
	// Kind is FixtureConfigMaps (default) or FixturePods; set it before
	// Grow.
	Kind string
	// Workers is how many creates run at once; default 16.
	Workers int
	// UpdatePodStatus writes a pod's status through the status
	// subresource; it is used when the server drops status at create
	// (kube-apiserver does, listwatch serve does not).
	UpdatePodStatus func(ctx context.Context, p *corev1.Pod) error
	// Progress, when set, receives progress lines or a bar.
	Progress func(label string, total int) *Progress

	c                *client.Client
	createdNamespace bool
	count            int // objects bench-0000000 … bench-(count-1) exist
}

// NewFixture returns a fixture in namespace ns of the server c talks to.
// It does nothing on the server until Prepare.
func NewFixture(c *client.Client, ns string) *Fixture {
	return &Fixture{Namespace: ns, c: c, Workers: 16}
}

// Prepare creates the namespace unless it exists.
func (f *Fixture) Prepare(ctx context.Context) error {
	nss := client.NewResource[*corev1.Namespace](f.c, namespacesGVR)
	_, err := nss.Get(ctx, f.Namespace)
	if err == nil {
		return nil
	}
	if !client.IsNotFound(err) {
		return fmt.Errorf("bench: namespace %s: %w", f.Namespace, err)
	}
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace, Labels: map[string]string{BenchLabel: "true"}},
	}
	if _, err := nss.Create(ctx, ns); err != nil && !client.IsAlreadyExists(err) {
		return fmt.Errorf("bench: creating namespace %s: %w", f.Namespace, err)
	}
	f.createdNamespace = true
	return nil
}

// Resource is the resource the fixture's objects belong to.
func (f *Fixture) Resource() string {
	if f.Kind == FixturePods {
		return podsGVR.Resource
	}
	return configMapsGVR.Resource
}

func (f *Fixture) gvr() client.GroupVersionResource {
	if f.Kind == FixturePods {
		return podsGVR
	}
	return configMapsGVR
}

// create creates the i-th object; it exists afterwards even if it did
// before.
func (f *Fixture) create(ctx context.Context, i int) error {
	var err error
	if f.Kind == FixturePods {
		pods := client.NewResource[*corev1.Pod](f.c, podsGVR).Namespace(f.Namespace)
		want := ProductionPod(f.Namespace, i)
		var got *corev1.Pod
		got, err = pods.Create(ctx, want)
		if err == nil && got.Status.Phase != want.Status.Phase {
			// A server that drops status on create (as kube-apiserver
			// does: the pod starts Pending) takes it through the status
			// subresource.
			if f.UpdatePodStatus == nil {
				return fmt.Errorf("bench: the server dropped %s's status at create, and the fixture has no UpdatePodStatus", ObjectName(i))
			}
			got.Status = want.Status
			err = f.UpdatePodStatus(ctx, got)
		}
	} else {
		_, err = client.NewResource[*corev1.ConfigMap](f.c, configMapsGVR).Namespace(f.Namespace).
			Create(ctx, newConfigMap(f.Namespace, ObjectName(i)))
	}
	if err != nil && !client.IsAlreadyExists(err) {
		return fmt.Errorf("bench: creating %s: %w", ObjectName(i), err)
	}
	return nil
}

// Count is how many bench objects the fixture holds.
func (f *Fixture) Count() int { return f.count }

// ObjectName is the name of the i-th bench object.
func ObjectName(i int) string { return fmt.Sprintf("bench-%07d", i) }

// payload is the ~1 KiB of data every bench ConfigMap carries.
var payload = strings.Repeat("listwatch-bench-", 64)

func newConfigMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{BenchLabel: "true"}},
		Data:       map[string]string{"payload": payload},
	}
}

// Grow creates objects until the fixture holds n. An object that already
// exists (a previous --keep run) counts as created.
func (f *Fixture) Grow(ctx context.Context, n int) error {
	if n <= f.count {
		return nil
	}
	from := f.count
	var prog *Progress
	if f.Progress != nil {
		prog = f.Progress(fmt.Sprintf("creating %d objects", n-from), n-from)
	}
	defer prog.Finish()
	err := parallel(ctx, max(f.Workers, 1), from, n, func(ctx context.Context, i int) error {
		if err := f.create(ctx, i); err != nil {
			return err
		}
		prog.Add(1)
		return nil
	})
	if err != nil {
		return err
	}
	f.count = n
	// A consistent read (no resourceVersion) brings a watch cache level
	// with the writes just made — a server answers it only once its cache
	// has seen them, or from etcd — so that the measured reads that may
	// be served stale (resourceVersion=0) see the whole fixture.
	_, err = client.NewResource[*object.Unstructured](f.c, f.gvr()).Namespace(f.Namespace).List(ctx, wire.ListOptions{Limit: 1})
	return err
}

// Cleanup deletes the bench objects and, if Prepare created it, the
// namespace.
func (f *Fixture) Cleanup(ctx context.Context) error {
	objs := client.NewResource[*object.Unstructured](f.c, f.gvr()).Namespace(f.Namespace)
	err := objs.DeleteCollection(ctx, wire.DeleteOptions{}, wire.ListOptions{LabelSelector: BenchLabel})
	if err != nil && !client.IsNotFound(err) {
		return fmt.Errorf("bench: deleting bench objects: %w", err)
	}
	if f.createdNamespace {
		nss := client.NewResource[*corev1.Namespace](f.c, namespacesGVR)
		if _, err := nss.Delete(ctx, f.Namespace, wire.DeleteOptions{}); err != nil && !client.IsNotFound(err) {
			return fmt.Errorf("bench: deleting namespace %s: %w", f.Namespace, err)
		}
	}
	f.count = 0
	return nil
}

// parallel runs fn(i) for i in [from, to) on workers goroutines and
// returns the first error; after an error the remaining indexes are
// skipped. It returns after every goroutine has exited.
func parallel(ctx context.Context, workers, from, to int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
	func() {
		defer close(next)
		for i := from; i < to; i++ {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}
