package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

var updateControllerRuntimeRecord = flag.Bool("update-controller-runtime-record", false,
	"write kube-apiserver's answers to the controller-runtime script to testdata/controller_runtime_kube.txt")

// controllerRuntimeRecord holds kube-apiserver v1.37.2's answers to
// controllerRuntimeScript, for machines without the binary.
const controllerRuntimeRecord = "testdata/controller_runtime_kube.txt"

// TestControllerRuntimeSameAsKube: a controller-runtime manager (its
// cache, cached and direct clients, leader election, a controller built
// with For and Owns, a metadata-only watch with a field index,
// server-side apply, an unstructured custom resource and its status)
// runs the same script against serve and a real kube-apiserver, and
// what it observes must be the same; without the binary, the same as
// kube's answers on record.
func TestControllerRuntimeSameAsKube(t *testing.T) {
	t.Parallel()
	ctrllog.SetLogger(logr.Discard())
	s := startServer(t, "")
	got := controllerRuntimeScript(t, restConfig(t, s), "serve")
	sameAsKubeOrRecord(t, got, controllerRuntimeRecord, *updateControllerRuntimeRecord, "-update-controller-runtime-record",
		func() []string { return controllerRuntimeScript(t, ownKubeRESTConfig(t), "kube") })
}

// sameAsKubeOrRecord compares a script's lines on serve, got, with the
// same script's on a kube-apiserver, run by kube, and checks the record
// (rewriting it when update, the flag named flagName, is set); without
// the binary, got is compared with the record.
func sameAsKubeOrRecord(t *testing.T, got []string, record string, update bool, flagName string, kube func() []string) {
	t.Helper()
	if _, err := kubeapiserver.Binary(); err != nil {
		t.Logf("no kube-apiserver (%v): comparing with its answers on record", err)
		compareLogs(t, got, readKubeRecord(t, record))
		return
	}
	want := kube()
	compareLogs(t, got, want)
	checkKubeRecord(t, record, want, update, flagName)
}

// crtReconciler keeps, for every ConfigMap labelled app=crt, a Secret
// NAME-secret it controls with the ConfigMap's data, and annotates the
// ConfigMap with the Secret's name: the usual owner pattern, reading from
// the manager's cache.
type crtReconciler struct {
	c    client.Client
	mu   sync.Mutex
	gone []string // ConfigMaps reconciled after they were deleted
}

func (r *crtReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm corev1.ConfigMap
	if err := r.c.Get(ctx, req.NamespacedName, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			if !slices.Contains(r.gone, req.Name) {
				r.gone = append(r.gone, req.Name)
			}
			r.mu.Unlock()
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cm.Name + "-secret", Namespace: cm.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.c, sec, func() error {
		sec.StringData = nil
		sec.Data = map[string][]byte{}
		for k, v := range cm.Data {
			sec.Data[k] = []byte(v)
		}
		return controllerutil.SetControllerReference(&cm, sec, r.c.Scheme())
	}); err != nil {
		return reconcile.Result{}, err
	}
	if cm.Annotations["crt/secret"] != sec.Name {
		patch := client.MergeFrom(cm.DeepCopy())
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations["crt/secret"] = sec.Name
		if err := r.c.Patch(ctx, &cm, patch); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// controllerRuntimeScript runs a manager against cfg's server in the
// namespace crt-script and returns what it observed, one line a step.
func controllerRuntimeScript(t *testing.T, cfg *rest.Config, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	const ns = "crt-script"
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// Field managers are named after the User-Agent: the same whatever
	// the test binary is called.
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "crt-script"
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	logf := func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) }
	errText := func(err error) string {
		if err == nil {
			return "ok"
		}
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			s := st.Status()
			return fmt.Sprintf("%d %s: %s", s.Code, s.Reason, s.Message)
		}
		return err.Error()
	}
	// poll waits for cond (up to a deadline: not a synchronisation).
	poll := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 3*time.Minute, true, cond); err != nil {
			t.Fatalf("%s: %s: %v", name, what, err)
		}
	}
	if err := direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	secretMeta := &metav1.PartialObjectMetadata{}
	secretMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                        scheme,
		Logger:                        logr.Discard(),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              "crt-script-lock",
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		// The script runs twice in one process (serve, kube): controller
		// names need not be unique across its managers.
		Controller: ctrlconfig.Controller{SkipNameValidation: kptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, secretMeta, "owner", func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil {
			return []string{ref.Kind + "/" + ref.Name}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := &crtReconciler{c: mgr.GetClient()}
	labelled, err := predicate.LabelSelectorPredicate(metav1.LabelSelector{MatchLabels: map[string]string{"app": "crt"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := builder.ControllerManagedBy(mgr).Named("crt").
		For(&corev1.ConfigMap{}, builder.WithPredicates(labelled)).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Complete(r); err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	// stopped stops the manager and returns what Start returned, once,
	// however often it is called (the deferred call after a failure too).
	stopped := sync.OnceValue(func() error {
		stop()
		return <-done
	})
	defer stopped()
	select {
	case <-mgr.Elected():
	case <-mctx.Done():
		t.Fatalf("%s: not elected", name)
	case <-done:
		t.Fatalf("%s: manager stopped: %v", name, stopped())
	}
	var lease coordinationv1.Lease
	if err := direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "crt-script-lock"}, &lease); err != nil {
		t.Fatal(err)
	}
	logf("elected: holder set %v, duration %d, transitions %d", kptr.Deref(lease.Spec.HolderIdentity, "") != "",
		kptr.Deref(lease.Spec.LeaseDurationSeconds, 0), kptr.Deref(lease.Spec.LeaseTransitions, -1))

	// The controller: a labelled ConfigMap gets its Secret and annotation.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns, Labels: map[string]string{"app": "crt"}},
		Data: map[string]string{"x": "1"}}
	logf("create a: %s", errText(direct.Create(ctx, cm)))
	var sec corev1.Secret
	secretIs := func(x string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			err := direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-secret"}, &sec)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && string(sec.Data["x"]) == x, err
		}
	}
	poll("secret a-secret", secretIs("1"))
	refs := func(o metav1.Object) string {
		var out []string
		for _, r := range o.GetOwnerReferences() {
			out = append(out, fmt.Sprintf("%s/%s %s controller=%v block=%v", r.APIVersion, r.Kind, r.Name,
				kptr.Deref(r.Controller, false), kptr.Deref(r.BlockOwnerDeletion, false)))
		}
		return strings.Join(out, ",")
	}
	logf("secret a-secret: type %s, data %q, owners %s", sec.Type, sec.Data, refs(&sec))
	poll("annotation on a", func(ctx context.Context) (bool, error) {
		err := direct.Get(ctx, client.ObjectKeyFromObject(cm), cm)
		return err == nil && cm.Annotations["crt/secret"] != "", err
	})
	logf("a annotated: %q", cm.Annotations)
	cm.Data["x"] = "2"
	logf("update a: %s", errText(direct.Update(ctx, cm)))
	poll("secret a-secret updated", secretIs("2"))
	logf("secret a-secret follows: %q", sec.Data)

	// The cache: a metadata-only list through the field index, and the
	// cached ConfigMap.
	poll("index", func(ctx context.Context) (bool, error) {
		var l metav1.PartialObjectMetadataList
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		if err := mgr.GetClient().List(ctx, &l, client.InNamespace(ns), client.MatchingFields{"owner": "ConfigMap/a"}); err != nil {
			return false, err
		}
		if len(l.Items) != 1 {
			return false, nil
		}
		logf("index owner=ConfigMap/a: %s %s, labels %v, owners %s", l.Items[0].Kind, l.Items[0].Name, l.Items[0].Labels, refs(&l.Items[0]))
		return true, nil
	})
	poll("cached a", func(ctx context.Context) (bool, error) {
		var c corev1.ConfigMap
		err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(cm), &c)
		return err == nil && c.Data["x"] == "2" && c.Annotations["crt/secret"] != "", err
	})
	logf("cached a: up to date")

	// Direct reads and writes: errors as the client reads them.
	reader := mgr.GetAPIReader()
	logf("get missing: %s", errText(reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: "missing"}, &corev1.ConfigMap{})))
	stale := cm.DeepCopy()
	stale.Data["x"] = "3"
	stale.ResourceVersion = "1"
	logf("update stale: %s", errText(direct.Update(ctx, stale)))
	logf("create existing: %s", errText(direct.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}})))
	logf("create invalid: %s", errText(direct.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns},
		Data: map[string]string{"bad key": "v"}})))
	logf("create dry run: %s", errText(direct.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry", Namespace: ns}}, client.DryRunAll)))
	logf("get dry run: %s", errText(reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: "dry"}, &corev1.ConfigMap{})))

	// Server-side apply, with a conflict between two owners.
	apply := func(owner, v string, force bool) error {
		opts := []client.ApplyOption{client.FieldOwner(owner)}
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		return direct.Apply(ctx, corev1ac.ConfigMap("b", ns).WithData(map[string]string{"k": v}), opts...)
	}
	managers := func() string {
		var b corev1.ConfigMap
		if err := reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: "b"}, &b); err != nil {
			return errText(err)
		}
		var out []string
		for _, m := range b.ManagedFields {
			out = append(out, fmt.Sprintf("%s %s %s", m.Manager, m.Operation, m.FieldsV1.String()))
		}
		return fmt.Sprintf("k=%s managers=[%s]", b.Data["k"], strings.Join(out, "; "))
	}
	logf("apply b by one: %s; %s", errText(apply("one", "1", false)), managers())
	logf("apply b by two: %s", errText(apply("two", "2", false)))
	logf("apply b by two, forced: %s; %s", errText(apply("two", "2", true)), managers())

	// An unstructured custom resource with a status subresource.
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.crt.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "crt.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"ready": {Type: "boolean"}}},
					}}},
			}},
		},
	}
	logf("create crd: %s", errText(direct.Create(ctx, crd)))
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crt.example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": ns}, "spec": map[string]any{"size": int64(1)}}}
	// The client's REST mapper learns the new kind from discovery once
	// the CRD is served (a deadline, not a synchronisation).
	poll("create gadget", func(ctx context.Context) (bool, error) {
		err := direct.Create(ctx, g.DeepCopy())
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err := direct.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
		t.Fatal(err)
	}
	gen := func(o *unstructured.Unstructured) string {
		st, _, _ := unstructured.NestedMap(o.Object, "status")
		spec, _, _ := unstructured.NestedMap(o.Object, "spec")
		return fmt.Sprintf("generation %d, spec %v, status %v", o.GetGeneration(), spec, st)
	}
	logf("gadget: %s", gen(g))
	_ = unstructured.SetNestedField(g.Object, true, "status", "ready")
	_ = unstructured.SetNestedField(g.Object, int64(5), "spec", "size")
	logf("status update: %s; %s", errText(direct.Status().Update(ctx, g)), gen(g))
	patch := client.MergeFrom(g.DeepCopy())
	_ = unstructured.SetNestedField(g.Object, int64(2), "spec", "size")
	logf("spec patch: %s; %s", errText(direct.Patch(ctx, g, patch)), gen(g))
	bad := g.DeepCopy()
	_ = unstructured.SetNestedField(bad.Object, "big", "spec", "size")
	logf("invalid update: %s", errText(direct.Update(ctx, bad)))
	poll("cached gadget", func(ctx context.Context) (bool, error) {
		c := &unstructured.Unstructured{}
		c.SetGroupVersionKind(g.GroupVersionKind())
		err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(g), c)
		if err != nil || c.GetResourceVersion() != g.GetResourceVersion() {
			return false, nil
		}
		logf("cached gadget: %s", gen(c))
		return true, nil
	})
	var gl unstructured.UnstructuredList
	gl.SetGroupVersionKind(g.GroupVersionKind())
	logf("list gadgets: %s, %s %d item(s)", errText(direct.List(ctx, &gl, client.InNamespace(ns))), gl.GetKind(), len(gl.Items))

	// The finalizer pattern: a delete marks the object, removing the last
	// finalizer lets it go.
	f := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: ns}}
	controllerutil.AddFinalizer(f, "crt.example.com/keep")
	logf("create f with a finalizer: %s", errText(direct.Create(ctx, f)))
	logf("delete f: %s", errText(direct.Delete(ctx, f)))
	if err := reader.Get(ctx, client.ObjectKeyFromObject(f), f); err != nil {
		t.Fatal(err)
	}
	logf("f marked: deletionTimestamp %v, finalizers %v, grace %d", f.DeletionTimestamp != nil, f.Finalizers,
		kptr.Deref(f.DeletionGracePeriodSeconds, -1))
	withFinalizer := f.DeepCopy()
	f.Data = map[string]string{"late": "write"}
	logf("update f while deleting: %s", errText(direct.Update(ctx, f)))
	logf("add a finalizer while deleting: %s", errText(direct.Patch(ctx, f, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["crt.example.com/keep","crt.example.com/new"]}}`)))))
	controllerutil.RemoveFinalizer(f, "crt.example.com/keep")
	logf("remove the finalizer: %s", errText(direct.Patch(ctx, f, client.MergeFrom(withFinalizer))))
	logf("f after: %s", errText(reader.Get(ctx, client.ObjectKeyFromObject(f), &corev1.ConfigMap{})))

	// Server-side apply of a custom resource's status.
	status := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crt.example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": ns}, "status": map[string]any{"ready": false}}}
	logf("apply gadget status: %s", errText(direct.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(status),
		client.FieldOwner("crt-status"), client.ForceOwnership)))
	if err := reader.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
		t.Fatal(err)
	}
	var gm []string
	for _, m := range g.GetManagedFields() {
		gm = append(gm, fmt.Sprintf("%s %s %s %s", m.Manager, m.Operation, m.Subresource, m.FieldsV1.String()))
	}
	slices.Sort(gm) // their order depends on when seconds begin (managedOf)
	logf("gadget after status apply: %s; managers [%s]", gen(g), strings.Join(gm, "; "))

	// A deleted ConfigMap: the reconciler finds it gone; its Secret stays
	// (no garbage collector runs beside either server).
	logf("delete a: %s", errText(direct.Delete(ctx, cm)))
	poll("reconciled gone", func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.Contains(r.gone, "a"), nil
	})
	logf("reconciled a gone; secret a-secret: %s", errText(reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-secret"}, &corev1.Secret{})))
	logf("delete gadget: %s", errText(direct.Delete(ctx, g)))
	logf("delete crd: %s", errText(direct.Delete(ctx, crd)))

	// Stopping releases the lease.
	if err := stopped(); err != nil {
		t.Fatalf("%s: manager: %v", name, err)
	}
	if err := direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "crt-script-lock"}, &lease); err != nil {
		t.Fatal(err)
	}
	logf("stopped: holder %q, transitions %d", kptr.Deref(lease.Spec.HolderIdentity, ""), kptr.Deref(lease.Spec.LeaseTransitions, -1))
	return log
}
