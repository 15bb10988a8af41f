package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
	"github.com/listwatch/listwatch/server/storage/etcd"
	"github.com/listwatch/listwatch/wire"
)

func resOf(c *client.Client, group, version, resource string) *client.Resource[*object.Unstructured] {
	return client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Group: group, Version: version, Resource: resource}).JSONOnly()
}

func newObj(apiVersion, kind, name string, fields map[string]any) *object.Unstructured {
	o := &object.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		o.Object[k] = v
	}
	o.SetName(name)
	return o
}

// awaitObject watches r for name until ok accepts an ADDED or MODIFIED
// state of it (its current state included), for up to 30s.
func awaitObject(t *testing.T, r *client.Resource[*object.Unstructured], name string, ok func(*object.Unstructured) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w, err := r.Watch(ctx, wire.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("waiting for %s: %v", name, err)
		}
		if (ev.Type == wire.Added || ev.Type == wire.Modified) && ok(ev.Object) {
			return
		}
	}
}

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestKubectlDeleteNamespace: kubectl delete namespace of a namespace
// holding 1,000 objects of three kinds, a custom one among them, returns
// once the namespace controller running in serve has emptied it and it is
// gone (kubectl waits on a watch); every object went with it.
func TestKubectlDeleteNamespace(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", apiservertest.WithControllers)
	c := ourClient(t, s)
	kubectl(t, s, gadgetCRD, "apply", "-f", "-")
	kubectl(t, s, "", "wait", "--for=condition=Established", "crd/gizmos.example.com", "--timeout=30s")
	kubectl(t, s, "", "create", "namespace", "big")

	kinds := []struct {
		r    *client.Resource[*object.Unstructured]
		n    int
		make func(name string) *object.Unstructured
	}{
		{resOf(c, "", "v1", "configmaps").Namespace("big"), 400, func(n string) *object.Unstructured {
			return newObj("v1", "ConfigMap", n, map[string]any{"data": map[string]any{"k": n}})
		}},
		{resOf(c, "", "v1", "secrets").Namespace("big"), 300, func(n string) *object.Unstructured {
			return newObj("v1", "Secret", n, map[string]any{"type": "Opaque"})
		}},
		{resOf(c, "example.com", "v1", "gizmos").Namespace("big"), 300, func(n string) *object.Unstructured {
			return newObj("example.com/v1", "Gizmo", n, map[string]any{"spec": map[string]any{"size": 1}})
		}},
	}
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers*len(kinds))
	for _, k := range kinds {
		for w := range workers {
			wg.Go(func() {
				for i := w; i < k.n; i += workers {
					if _, err := k.r.Create(t.Context(), k.make(fmt.Sprintf("obj-%04d", i))); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// The namespace's events, from before the delete to its DELETED.
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	w, err := resOf(c, "", "v1", "namespaces").Watch(ctx, wire.ListOptions{FieldSelector: "metadata.name=big"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	start := time.Now()
	out := kubectl(t, s, "", "delete", "namespace", "big", "--timeout=60s")
	if !strings.Contains(out, `namespace "big" deleted`) {
		t.Fatalf("kubectl delete: %s", out)
	}
	t.Logf("namespace of 1,000 objects deleted in %v", time.Since(start))
	if out, err := kubectlErr(t, s, "", "get", "namespace", "big"); err == nil || !strings.Contains(out, `namespaces "big" not found`) {
		t.Fatalf("after delete: %v %s", err, out)
	}
	for _, k := range kinds {
		l, err := k.r.List(t.Context(), wire.ListOptions{})
		if err != nil || len(l.Items) != 0 {
			t.Fatalf("%s left: %d, %v", k.r.GVR(), len(l.Items), err)
		}
	}
	// The controller, not the DELETE, emptied it: the namespace was
	// Terminating with the controller's conditions before it went.
	var conditions []string
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("namespace watch: %v", err)
		}
		if ev.Type == wire.Deleted {
			break
		}
		list, _ := ev.Object.Nested("status", "conditions")
		conds, _ := list.([]any)
		for _, c := range conds {
			m := c.(map[string]any)
			conditions = append(conditions, fmt.Sprint(m["type"], "=", m["status"]))
		}
	}
	if !slices.Contains(conditions, "NamespaceContentRemaining=False") || !slices.Contains(conditions, "NamespaceDeletionContentFailure=False") {
		t.Fatalf("conditions seen before the namespace went: %v", conditions)
	}
}

// TestNewNamespaceDefaults: a new namespace gets the default
// ServiceAccount and kube-root-ca.crt with the server's CA.
func TestNewNamespaceDefaults(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", apiservertest.WithControllers)
	c := ourClient(t, s)
	kubectl(t, s, "", "create", "namespace", "fresh")
	awaitObject(t, resOf(c, "", "v1", "serviceaccounts").Namespace("fresh"), "default", func(*object.Unstructured) bool { return true })
	ca := string(s.Credentials().CAPEM)
	awaitObject(t, resOf(c, "", "v1", "configmaps").Namespace("fresh"), "kube-root-ca.crt", func(cm *object.Unstructured) bool {
		got, _ := cm.Nested("data", "ca.crt")
		return got == ca && cm.GetAnnotations()["kubernetes.io/description"] != ""
	})
	if out := kubectl(t, s, "", "get", "serviceaccount", "default", "-n", "fresh", "-o", "name"); strings.TrimSpace(out) != "serviceaccount/default" {
		t.Fatalf("kubectl get sa: %q", out)
	}
	// The controllers' metrics are the server's.
	_, body := rawGet(t, s, s.URL()+"/metrics", nil)
	for _, want := range []string{
		`controller_reconcile_total{controller="serviceaccount-controller",result="success"}`,
		`workqueue_adds_total{name="root-ca-certificate-publisher-controller"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestNoControllers: with --controllers= (none) serve is kube-apiserver
// alone, as envtest: a deleted namespace stays Terminating with its
// content, creates in it are refused with kube's 403, and no default
// ServiceAccount is made.
func TestNoControllers(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", func(o *apiserver.Options) { o.Controllers = []string{} })
	kubectl(t, s, "", "create", "namespace", "stays")
	kubectl(t, s, "", "create", "configmap", "kept", "-n", "stays")
	kubectl(t, s, "", "delete", "namespace", "stays", "--wait=false")
	if out := kubectl(t, s, "", "get", "namespace", "stays", "-o", "jsonpath={.status.phase} {.spec.finalizers}"); out != `Terminating ["kubernetes"]` {
		t.Fatalf("phase and finalizers: %q", out)
	}
	out, err := kubectlErr(t, s, "", "create", "configmap", "late", "-n", "stays")
	if err == nil || !strings.Contains(out, `configmaps "late" is forbidden: unable to create new content in namespace stays because it is being terminated`) {
		t.Fatalf("create in a Terminating namespace: %v %s", err, out)
	}
	if out := kubectl(t, s, "", "get", "configmaps,serviceaccounts", "-n", "stays", "-o", "name"); strings.TrimSpace(out) != "configmap/kept" {
		t.Fatalf("content of the Terminating namespace: %q", out)
	}
}

// TestControllersOnOneReplica: two servers on one etcd run the
// controllers on one of them only, the one the Lease
// kube-system/kube-controller-manager names; when it stops, it releases
// the lease and the other takes over at once.
func TestControllersOnOneReplica(t *testing.T) {
	t.Parallel()
	emb, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{Dir: t.TempDir(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close() })
	ec := emb.ClientConfig()
	shared := t.TempDir()
	replica := func(name string) *testServer {
		return startServer(t, shared, apiservertest.WithControllers, func(o *apiserver.Options) {
			o.EtcdServers, o.EtcdCAFile, o.EtcdCertFile, o.EtcdKeyFile = ec.Endpoints, ec.CAFile, ec.CertFile, ec.KeyFile
			o.KubeconfigPath = filepath.Join(shared, "kubeconfig-"+name)
		})
	}
	a, b := replica("a"), replica("b")
	var holder string
	awaitLease := func(via *testServer, not string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		w, err := leasesOf(ourClient(t, via)).Namespace("kube-system").Watch(ctx, wire.ListOptions{FieldSelector: "metadata.name=kube-controller-manager"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for {
			ev, err := w.Next()
			if err != nil {
				t.Fatalf("lease watch: %v", err)
			}
			if h := ev.Object.Spec.HolderIdentity; h != "" && h != not && ev.Type != wire.Deleted {
				holder = h
				return
			}
		}
	}
	awaitLease(a, "")
	// A replica's flag is set once its lease write returned; the watch
	// may have told first.
	waitUntil(t, "a replica to lead", func() bool { return a.ControllersLeading() || b.ControllersLeading() })
	leader, follower := a, b
	if b.ControllersLeading() {
		leader, follower = b, a
	}
	if follower.ControllersLeading() {
		t.Fatal("both replicas run the controllers")
	}
	first := holder
	stopped := time.Now()
	leader.Stop()
	awaitLease(follower, first)
	waitUntil(t, "the other replica to lead", follower.ControllersLeading)
	// The stopping replica released the lease before it stopped serving,
	// so the other took it at its next retry (2s), not after the lease
	// duration (15s) of a holder that vanished.
	if d := time.Since(stopped); d > 10*time.Second {
		t.Fatalf("takeover took %v", d)
	}
}

// waitUntil checks cond every 20ms for up to 30s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
