package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

var updateControllerRuntimeAuditRecord = flag.Bool("update-controller-runtime-audit-record", false,
	"write kube-apiserver's answers to the controller-runtime audit script to testdata/controller_runtime_audit_kube.txt")

// controllerRuntimeAuditRecord holds kube-apiserver v1.37.2's answers to
// controllerRuntimeAuditScript, for machines without the binary.
const controllerRuntimeAuditRecord = "testdata/controller_runtime_audit_kube.txt"

// TestControllerRuntimeAuditSameAsKube: what controller authors rely on
// beyond a manager's controller (TestControllerRuntimeSameAsKube): a
// cache with per-object namespaces, selectors and transforms, metadata
// and unstructured reads through client and cache, server-side apply of
// unstructured objects, status and scale subresources, eviction,
// optimistic locking, DeleteAllOf, CreateOrUpdate and CreateOrPatch, a
// CRD served in two versions and the dry-run client give the same
// outcome on serve as on a real kube-apiserver (or kube's answers on
// record).
func TestControllerRuntimeAuditSameAsKube(t *testing.T) {
	t.Parallel()
	ctrllog.SetLogger(logr.Discard())
	s := startServer(t, "", apiservertest.WithControllers)
	got := controllerRuntimeAuditScript(t, restConfig(t, s), "serve")
	if testing.Short() {
		return
	}
	sameAsKubeOrRecord(t, got, controllerRuntimeAuditRecord, *updateControllerRuntimeAuditRecord, "-update-controller-runtime-audit-record",
		func() []string {
			kcfg := ownKubeRESTConfig(t)
			stopGC := startKubeGC(t, kcfg)
			defer stopGC()
			return controllerRuntimeAuditScript(t, kcfg, "kube")
		})
}

// auditErr is an error as a controller classifies it: its Status, and
// what IgnoreNotFound, IsConflict and the other predicates make of it.
func auditErr(err error) string {
	if err == nil {
		return "ok"
	}
	var class []string
	for _, c := range []struct {
		name string
		is   func(error) bool
	}{
		{"notfound", apierrors.IsNotFound}, {"conflict", apierrors.IsConflict}, {"exists", apierrors.IsAlreadyExists},
		{"invalid", apierrors.IsInvalid}, {"toomany", apierrors.IsTooManyRequests}, {"badrequest", apierrors.IsBadRequest},
		{"forbidden", apierrors.IsForbidden}, {"gone", apierrors.IsGone}, {"nomatch", meta.IsNoMatchError},
	} {
		if c.is(err) {
			class = append(class, c.name)
		}
	}
	if client.IgnoreNotFound(err) == nil {
		class = append(class, "ignored")
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		msg := resourceVersionInMessage.ReplaceAllString(s.Message, "(N)")
		return fmt.Sprintf("%d %s [%s]: %s", s.Code, s.Reason, strings.Join(class, ","), msg)
	}
	return fmt.Sprintf("[%s] %v", strings.Join(class, ","), err)
}

// auditObj is o as JSON without the fields a server makes up (uid,
// resourceVersion, timestamps, managed fields' times).
func auditObj(o any) string {
	b, err := json.Marshal(o)
	if err != nil {
		return err.Error()
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err.Error()
	}
	md, _ := m["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"} {
		if _, ok := md[k]; ok {
			md[k] = "*"
		}
	}
	if mf, ok := md["managedFields"].([]any); ok {
		for _, e := range mf {
			if e, ok := e.(map[string]any); ok {
				delete(e, "time")
			}
		}
		// In a stable order, as managedOf's.
		slices.SortFunc(mf, func(a, b any) int {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			return bytes.Compare(ja, jb)
		})
	}
	for _, r := range asSlice(md["ownerReferences"]) {
		if r, ok := r.(map[string]any); ok {
			r["uid"] = "*"
		}
	}
	if st, ok := m["status"].(map[string]any); ok {
		for _, c := range asSlice(st["conditions"]) {
			if c, ok := c.(map[string]any); ok {
				for _, k := range []string{"lastTransitionTime", "lastUpdateTime", "lastProbeTime"} {
					if _, ok := c[k]; ok {
						c[k] = "*"
					}
				}
			}
		}
	}
	b, _ = json.Marshal(m)
	return string(b)
}

// resourceVersionInMessage is a resourceVersion a precondition's
// Conflict names, which differs from server to server.
var resourceVersionInMessage = regexp.MustCompile(`\(\d+\)`)

// managedOf is o's managed fields without their times, sorted: kube's
// field manager orders the entries of one operation by their time in
// seconds, so two entries written a moment apart come in either order
// depending on whether a second began between them, on any server.
func managedOf(o metav1.Object) string {
	var out []string
	for _, m := range o.GetManagedFields() {
		out = append(out, fmt.Sprintf("%s %s %s %s %s", m.Manager, m.Operation, m.APIVersion, m.Subresource, m.FieldsV1.String()))
	}
	slices.Sort(out)
	return "managed [" + strings.Join(out, "; ") + "]"
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// controllerRuntimeAuditScript runs the audit against cfg's server in the
// namespaces crt-audit and crt-audit-b and returns what it observed.
func controllerRuntimeAuditScript(t *testing.T, cfg *rest.Config, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const ns, nsb = "crt-audit", "crt-audit-b"
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "crt-audit"
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	logf := func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) }
	poll := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Minute, true, cond); err != nil {
			t.Fatalf("%s: %s: %v", name, what, err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, n := range []string{ns, nsb} {
		must(direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	cmIn := func(namespace, n, tier string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: namespace, Labels: map[string]string{"tier": tier}},
			Data: map[string]string{"n": n}}
	}
	for _, c := range []*corev1.ConfigMap{cmIn(ns, "x1", "x"), cmIn(ns, "y1", "y"), cmIn(nsb, "x2", "x"), cmIn(nsb, "y2", "y")} {
		must(direct.Create(ctx, c))
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: ns}, Type: "crt/one"},
		{ObjectMeta: metav1.ObjectMeta{Name: "s2", Namespace: ns}, Type: "crt/two"},
	} {
		must(direct.Create(ctx, s))
	}

	// An eviction a budget refuses is a 429 with a Retry-After, which
	// client-go retries for ten times as long: evictions go through a
	// client that sees the header and drops it.
	ecfg := rest.CopyConfig(cfg)
	var retryAfter []string
	ecfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return noRetryAfter{rt, func(v string) { retryAfter = append(retryAfter, v) }}
	})
	evictor, err := client.New(ecfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	evict := func(p *corev1.Pod, name string) string {
		retryAfter = nil
		err := evictor.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
		return fmt.Sprintf("%s (Retry-After %q)", auditErr(err), retryAfter)
	}
	start := time.Now()
	cacheScript(t, ctx, cfg, scheme, direct, ns, nsb, logf, poll)
	readScript(ctx, direct, ns, logf)
	writeScript(t, ctx, direct, evict, ns, logf, poll)
	t.Logf("%s: audit script ran in %v", name, time.Since(start).Round(time.Millisecond))
	return log
}

// cacheScript: a cache whose ConfigMaps are chosen per namespace by
// label and field selectors, Secrets by a field selector, all without
// managed fields; metadata-only and unstructured informers beside them.
func cacheScript(t *testing.T, ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, direct client.Client, ns, nsb string,
	logf func(string, ...any), poll func(string, func(context.Context) (bool, error))) {
	t.Helper()
	c, err := cache.New(cfg, cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}, nsb: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {
				Namespaces: map[string]cache.Config{
					ns:  {LabelSelector: labels.SelectorFromSet(labels.Set{"tier": "x"})},
					nsb: {FieldSelector: fields.OneTermEqualSelector("metadata.name", "y2")},
				},
				UnsafeDisableDeepCopy: kptr.To(true),
			},
			&corev1.Secret{}: {Field: fields.OneTermEqualSelector("type", "crt/two")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.IndexField(ctx, &corev1.ConfigMap{}, "data.n", func(o client.Object) []string {
		return []string{o.(*corev1.ConfigMap).Data["n"]}
	}); err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("cache: %v", err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache not synced")
	}
	names := func(l client.ObjectList) string {
		var out []string
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			m, _ := meta.Accessor(o)
			out = append(out, fmt.Sprintf("%s/%s(mf=%d)", m.GetNamespace(), m.GetName(), len(m.GetManagedFields())))
			return nil
		})
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	var cms corev1.ConfigMapList
	logf("cache list configmaps: %s; %s", auditErr(c.List(ctx, &cms)), names(&cms))
	cms = corev1.ConfigMapList{}
	logf("cache list configmaps in %s: %s; %s", nsb, auditErr(c.List(ctx, &cms, client.InNamespace(nsb))), names(&cms))
	cms = corev1.ConfigMapList{}
	logf("cache list configmaps data.n=x1: %s; %s", auditErr(c.List(ctx, &cms, client.MatchingFields{"data.n": "x1"})), names(&cms))
	cms = corev1.ConfigMapList{}
	logf("cache list configmaps data.n=y1: %s; %s", auditErr(c.List(ctx, &cms, client.MatchingFields{"data.n": "y1"})), names(&cms))
	var secrets corev1.SecretList
	logf("cache list secrets: %s; %s", auditErr(c.List(ctx, &secrets)), names(&secrets))
	logf("cache get y1 (not selected): %s", auditErr(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "y1"}, &corev1.ConfigMap{})))
	logf("cache get in another namespace: %s", auditErr(c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "x"}, &corev1.ConfigMap{})))

	// A label change takes an object into, then out of, the cache.
	y1 := &corev1.ConfigMap{}
	if err := direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "y1"}, y1); err != nil {
		t.Fatal(err)
	}
	p := client.MergeFrom(y1.DeepCopy())
	y1.Labels["tier"] = "x"
	logf("relabel y1: %s", auditErr(direct.Patch(ctx, y1, p)))
	poll("y1 cached", func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKeyFromObject(y1), &corev1.ConfigMap{}) == nil, nil
	})
	p = client.MergeFrom(y1.DeepCopy())
	y1.Labels["tier"] = "y"
	logf("relabel y1 back: %s", auditErr(direct.Patch(ctx, y1, p)))
	poll("y1 gone from the cache", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(y1), &corev1.ConfigMap{})), nil
	})
	logf("y1 left the cache")

	// Metadata only, through the cache and directly.
	pm := &metav1.PartialObjectMetadata{}
	pm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	logf("cache get secret s2 metadata: %s; %s %s labels %v mf=%d", auditErr(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "s2"}, pm)),
		pm.APIVersion, pm.Kind, pm.Labels, len(pm.ManagedFields))
	pl := &metav1.PartialObjectMetadataList{}
	pl.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	logf("cache list configmap metadata: %s; %s %s", auditErr(c.List(ctx, pl, client.InNamespace(ns))), pl.Kind, names(pl))
	pm = &metav1.PartialObjectMetadata{}
	pm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	logf("direct get configmap metadata: %s; %s", auditErr(direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "x1"}, pm)), auditObj(pm))
	pl = &metav1.PartialObjectMetadataList{}
	pl.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	logf("direct list configmap metadata tier=x: %s; %s %s %s", auditErr(direct.List(ctx, pl, client.InNamespace(ns), client.MatchingLabels{"tier": "x"})),
		pl.APIVersion, pl.Kind, names(pl))
	pm = &metav1.PartialObjectMetadata{}
	pm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	logf("direct get missing metadata: %s", auditErr(direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "missing"}, pm)))

	// Unstructured through the cache.
	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	logf("cache list unstructured configmaps: %s; %s", auditErr(c.List(ctx, ul, client.InNamespace(ns))), names(ul))
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "x1"}, u); err != nil {
		t.Fatal(err)
	}
	logf("cache get unstructured x1: %s", auditObj(u.Object))
}

// readScript: reads of metadata and unstructured objects, directly.
func readScript(ctx context.Context, direct client.Client, ns string, logf func(string, ...any)) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	logf("direct get unstructured x1: %s; %s", auditErr(direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "x1"}, u)), auditObj(u.Object))
	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	logf("direct list unstructured secrets type=crt/one: %s; %s %d", auditErr(direct.List(ctx, ul, client.InNamespace(ns),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("type", "crt/one")})), ul.GetKind(), len(ul.Items))
	logf("direct list by a field not indexed: %s", auditErr(direct.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns),
		client.MatchingFields{"data.n": "x1"})))
}

// writeScript: the writes a controller makes.
func writeScript(t *testing.T, ctx context.Context, direct client.Client, evict func(*corev1.Pod, string) string, ns string, logf func(string, ...any),
	poll func(string, func(context.Context) (bool, error))) {
	t.Helper()
	// Server-side apply of an unstructured object.
	applied := func(k string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "ap", "namespace": ns, "labels": map[string]any{"by": "apply"}},
			"data":     map[string]any{"k": k}}}
	}
	ac := applied("1")
	logf("apply unstructured: %s", auditErr(direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(ac), client.FieldOwner("one"))))
	logf("apply answer: %s", auditObj(ac.Object))
	logf("apply unstructured by two: %s", auditErr(direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied("2")), client.FieldOwner("two"))))
	logf("apply unstructured by two, forced: %s", auditErr(direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied("2")),
		client.FieldOwner("two"), client.ForceOwnership)))
	logf("apply again, unchanged: %s", auditErr(direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied("2")),
		client.FieldOwner("two"))))
	logf("apply with the answer's managedFields: %s", auditErr(direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(ac), client.FieldOwner("one"))))
	got := &corev1.ConfigMap{}
	logf("applied: %s; %s", auditErr(direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "ap"}, got)), auditObj(got))
	noName := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": ns}}}
	logf("apply without a name: %s", auditErr(direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(noName), client.FieldOwner("one"))))
	logf("patch apply without a field owner: %s", auditErr(direct.Patch(ctx, applied("3"), client.Apply)))

	// Optimistic locking.
	x1 := &corev1.ConfigMap{}
	if err := direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "x1"}, x1); err != nil {
		t.Fatal(err)
	}
	old := x1.DeepCopy()
	x1.Data["lock"] = "1"
	logf("merge patch with lock: %s", auditErr(direct.Patch(ctx, x1, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))))
	x1.Data["lock"] = "2"
	logf("merge patch with a stale lock: %s", auditErr(direct.Patch(ctx, x1, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))))
	logf("strategic patch with a stale lock: %s", auditErr(direct.Patch(ctx, x1, client.StrategicMergeFrom(old, client.MergeFromWithOptimisticLock{}))))
	logf("merge patch of a missing object: %s", auditErr(direct.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns}},
		client.MergeFrom(&corev1.ConfigMap{}))))
	logf("delete with a stale precondition: %s", auditErr(direct.Delete(ctx, x1, client.Preconditions{ResourceVersion: &old.ResourceVersion})))
	logf("delete missing: %s", auditErr(direct.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns}})))

	// CreateOrUpdate and CreateOrPatch.
	cu := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cu", Namespace: ns}}
	mutate := func(v string) controllerutil.MutateFn {
		return func() error {
			if cu.Data == nil {
				cu.Data = map[string]string{}
			}
			cu.Data["v"] = v
			return nil
		}
	}
	for _, v := range []string{"1", "1", "2"} {
		res, err := controllerutil.CreateOrUpdate(ctx, direct, cu, mutate(v))
		logf("create or update v=%s: %s %s", v, res, auditErr(err))
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	depMutate := func(replicas int32, ready int32) controllerutil.MutateFn {
		return func() error {
			dep.Spec.Replicas = kptr.To(replicas)
			dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
			dep.Spec.Template.Labels = map[string]string{"app": "web"}
			dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx"}}
			dep.Status.ReadyReplicas = ready
			dep.Status.Replicas = ready
			return nil
		}
	}
	for _, s := range [][2]int32{{2, 0}, {2, 0}, {3, 0}, {3, 1}, {3, 1}, {4, 2}} {
		res, err := controllerutil.CreateOrPatch(ctx, direct, dep, depMutate(s[0], s[1]))
		logf("create or patch replicas=%d ready=%d: %s %s; generation %d observed %d ready %d", s[0], s[1], res, auditErr(err),
			dep.Generation, dep.Status.ObservedGeneration, dep.Status.ReadyReplicas)
	}

	// Status.
	dep.Status.ObservedGeneration = dep.Generation
	dep.Status.Replicas = 4
	logf("status update: %s; generation %d observed %d", auditErr(direct.Status().Update(ctx, dep)), dep.Generation, dep.Status.ObservedGeneration)
	sp := client.MergeFrom(dep.DeepCopy())
	dep.Status.AvailableReplicas = 1
	dep.Spec.Replicas = kptr.To(int32(9))
	logf("status patch (with a spec change): %s; replicas %d available %d", auditErr(direct.Status().Patch(ctx, dep, sp)),
		kptr.Deref(dep.Spec.Replicas, -1), dep.Status.AvailableReplicas)
	stale := dep.DeepCopy()
	stale.ResourceVersion = "1"
	logf("status update stale: %s", auditErr(direct.Status().Update(ctx, stale)))
	logf("status update missing: %s", auditErr(direct.Status().Update(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns}})))

	// Scale.
	sc := &autoscalingv1.Scale{}
	logf("get scale: %s; %s", auditErr(direct.SubResource("scale").Get(ctx, dep, sc)), auditObj(sc))
	sc.Spec.Replicas = 5
	logf("update scale: %s; %s", auditErr(direct.SubResource("scale").Update(ctx, dep, client.WithSubResourceBody(sc))), auditObj(sc))
	sc.ResourceVersion = "1"
	logf("update scale stale: %s", auditErr(direct.SubResource("scale").Update(ctx, dep, client.WithSubResourceBody(sc))))
	sc = &autoscalingv1.Scale{}
	logf("patch scale: %s; replicas %d", auditErr(direct.SubResource("scale").Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":6}}`)),
		client.WithSubResourceBody(sc))), sc.Spec.Replicas)
	logf("get scale of a configmap: %s", auditErr(direct.SubResource("scale").Get(ctx, x1, &autoscalingv1.Scale{})))
	logf("get scale missing: %s", auditErr(direct.SubResource("scale").Get(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns}}, &autoscalingv1.Scale{})))
	if err := direct.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	logf("deployment after scale: replicas %d generation %d; %s", kptr.Deref(dep.Spec.Replicas, -1), dep.Generation, managedOf(dep))

	// Eviction.
	pod := func(n string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, Labels: map[string]string{"app": "ev"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	}
	p1 := pod("p1")
	logf("create pod p1: %s", auditErr(direct.Create(ctx, p1)))
	logf("evict pending p1: %s", evict(p1, "p1"))
	logf("p1 after: %s", auditErr(direct.Get(ctx, client.ObjectKeyFromObject(p1), &corev1.Pod{})))
	logf("evict missing: %s", evict(pod("missing"), "missing"))
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "pdb", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: kptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ev"}}}}
	logf("create pdb: %s", auditErr(direct.Create(ctx, pdb)))
	p2 := pod("p2")
	logf("create pod p2: %s", auditErr(direct.Create(ctx, p2)))
	p2.Status.Phase = corev1.PodRunning
	p2.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	logf("p2 running: %s", auditErr(direct.Status().Update(ctx, p2)))
	logf("evict running p2 under a pdb: %s", evict(p2, "p2"))
	logf("evict with the eviction's wrong name: %s", evict(p2, "other"))
	logf("delete pdb: %s", auditErr(direct.Delete(ctx, pdb)))
	logf("evict running p2: %s", evict(p2, "p2"))
	if err := direct.Get(ctx, client.ObjectKeyFromObject(p2), p2); err != nil {
		logf("p2 after: %s", auditErr(err))
	} else {
		logf("p2 after: deleting %v grace %d", p2.DeletionTimestamp != nil, kptr.Deref(p2.DeletionGracePeriodSeconds, -1))
	}

	dryRunScript(t, ctx, direct, ns, logf)
	deleteAllOfScript(t, ctx, direct, ns, logf, poll)
	crtVersionsScript(t, ctx, direct, ns, logf, poll)
}

// dryRunScript: the dry-run client answers as the server would and
// changes nothing.
func dryRunScript(t *testing.T, ctx context.Context, direct client.Client, ns string, logf func(string, ...any)) {
	t.Helper()
	dry := client.NewDryRunClient(direct)
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry", Namespace: ns}, Data: map[string]string{"a": "1"}}
	logf("dry create: %s; uid set %v, %s", auditErr(dry.Create(ctx, c)), c.UID != "", auditObj(c))
	logf("dry create, then get: %s", auditErr(direct.Get(ctx, client.ObjectKeyFromObject(c), &corev1.ConfigMap{})))
	x1 := &corev1.ConfigMap{}
	if err := direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "x1"}, x1); err != nil {
		t.Fatal(err)
	}
	rv := x1.ResourceVersion
	x1.Data["dry"] = "yes"
	logf("dry update: %s; same resourceVersion %v, data %v", auditErr(dry.Update(ctx, x1)), x1.ResourceVersion == rv, x1.Data)
	p := client.MergeFrom(x1.DeepCopy())
	x1.Labels["dry"] = "yes"
	logf("dry patch: %s; labels %v", auditErr(dry.Patch(ctx, x1, p)), x1.Labels)
	logf("dry delete: %s", auditErr(dry.Delete(ctx, x1)))
	logf("dry delete missing: %s", auditErr(dry.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns}})))
	after := &corev1.ConfigMap{}
	logf("after dry runs: %s; same resourceVersion %v, data %v labels %v", auditErr(direct.Get(ctx, client.ObjectKeyFromObject(x1), after)),
		after.ResourceVersion == rv, after.Data, after.Labels)
	logf("dry delete all: %s", auditErr(dry.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns))))
	var l corev1.ConfigMapList
	_ = direct.List(ctx, &l, client.InNamespace(ns))
	var left []string
	for _, c := range l.Items {
		// kube-controller-manager's root CA publisher runs beside
		// serve only.
		if c.Name != "kube-root-ca.crt" {
			left = append(left, c.Name)
		}
	}
	logf("after dry delete all: %v", left)
	ac := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "dry-apply", "namespace": ns}, "data": map[string]any{"k": "1"}}}
	logf("dry apply: %s", auditErr(dry.Apply(ctx, client.ApplyConfigurationFromUnstructured(ac), client.FieldOwner("dry"))))
	logf("dry apply, then get: %s", auditErr(direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "dry-apply"}, &corev1.ConfigMap{})))
}

// deleteAllOfScript: DeleteAllOf by label with each propagation policy,
// and owners with controlled dependents the garbage collector takes.
func deleteAllOfScript(t *testing.T, ctx context.Context, direct client.Client, ns string, logf func(string, ...any),
	poll func(string, func(context.Context) (bool, error))) {
	t.Helper()
	scheme := direct.Scheme()
	mk := func(n, group string, owner *corev1.ConfigMap) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, Labels: map[string]string{"group": group}}}
		if owner != nil {
			if err := controllerutil.SetControllerReference(owner, c, scheme); err != nil {
				t.Fatal(err)
			}
		}
		if err := direct.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	owners := map[string]*corev1.ConfigMap{}
	for _, policy := range []string{"bg", "fg", "orphan"} {
		o := mk("own-"+policy, policy, nil)
		owners[policy] = o
		mk("dep-"+policy, "deps", o)
	}
	other := &corev1.ConfigMap{}
	if err := direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "dep-bg"}, other); err != nil {
		t.Fatal(err)
	}
	logf("set a second controller: %s", auditErr(controllerutil.SetControllerReference(owners["fg"], other, scheme)))
	refs, _ := json.Marshal(other.OwnerReferences)
	logf("owner references: %s", regexp.MustCompile(`"uid":"[^"]*"`).ReplaceAll(refs, []byte(`"uid":"*"`)))
	for _, c := range []struct {
		group  string
		policy metav1.DeletionPropagation
	}{{"bg", metav1.DeletePropagationBackground}, {"fg", metav1.DeletePropagationForeground}, {"orphan", metav1.DeletePropagationOrphan}} {
		logf("delete all of group=%s, %s: %s", c.group, c.policy, auditErr(direct.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns),
			client.MatchingLabels{"group": c.group}, client.PropagationPolicy(c.policy))))
	}
	state := func() string {
		var l corev1.ConfigMapList
		if err := direct.List(ctx, &l, client.InNamespace(ns), client.HasLabels{"group"}); err != nil {
			return auditErr(err)
		}
		var out []string
		for _, c := range l.Items {
			var owners []string
			for _, r := range c.OwnerReferences {
				owners = append(owners, r.Name)
			}
			out = append(out, fmt.Sprintf("%s(owners=%v finalizers=%v deleting=%v)", c.Name, owners, c.Finalizers, c.DeletionTimestamp != nil))
		}
		return strings.Join(out, " ")
	}
	gcStart := time.Now()
	defer func() { t.Logf("garbage collected in %v", time.Since(gcStart).Round(time.Millisecond)) }()
	poll("garbage collected", func(context.Context) (bool, error) {
		return state() == "dep-orphan(owners=[] finalizers=[] deleting=false)", nil
	})
	logf("after the garbage collector: %s", state())
	logf("delete all without a namespace: %s", auditErr(direct.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.MatchingLabels{"group": "none"})))
	logf("delete all by a bad field: %s", auditErr(direct.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns), client.MatchingFields{"data.n": "x"})))
}

// crtVersionsScript: a CRD served as v1alpha1 and v1 (stored as v1, no
// conversion webhook) read and written in either version, through the
// client and a cache.
func crtVersionsScript(t *testing.T, ctx context.Context, direct client.Client, ns string, logf func(string, ...any),
	poll func(string, func(context.Context) (bool, error))) {
	t.Helper()
	validation := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"replicas": {Type: "integer"}, "old": {Type: "string"}}},
			"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"replicas": {Type: "integer"}, "selector": {Type: "string"}}},
		}}}
	sub := &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
			LabelSelectorPath: kptr.To(".status.selector")}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.crt-audit.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "crt-audit.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Deprecated: true, Schema: validation, Subresources: sub},
				{Name: "v1", Served: true, Storage: true, Schema: validation, Subresources: sub},
			},
		},
	}
	logf("create crd: %s", auditErr(direct.Create(ctx, crd)))
	w := func(v string, n string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "crt-audit.example.com/" + v, "kind": "Widget",
			"metadata": map[string]any{"name": n, "namespace": ns}, "spec": map[string]any{"replicas": int64(1), "old": "x"}}}
	}
	poll("create widget", func(ctx context.Context) (bool, error) {
		err := direct.Create(ctx, w("v1alpha1", "w1"))
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	for _, v := range []string{"v1", "v1alpha1"} {
		u := w(v, "w1")
		logf("get w1 as %s: %s; %s", v, auditErr(direct.Get(ctx, client.ObjectKeyFromObject(u), u)), auditObj(u.Object))
	}
	u := w("v1", "w1")
	_ = direct.Get(ctx, client.ObjectKeyFromObject(u), u)
	_ = unstructured.SetNestedField(u.Object, "app=w", "status", "selector")
	_ = unstructured.SetNestedField(u.Object, int64(1), "status", "replicas")
	logf("status update as v1: %s", auditErr(direct.Status().Update(ctx, u)))
	sc := &unstructured.Unstructured{}
	sc.SetGroupVersionKind(autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
	logf("get widget scale: %s; %s", auditErr(direct.SubResource("scale").Get(ctx, w("v1alpha1", "w1"), sc)), auditObj(sc.Object))
	_ = unstructured.SetNestedField(sc.Object, int64(3), "spec", "replicas")
	logf("update widget scale: %s; %s", auditErr(direct.SubResource("scale").Update(ctx, w("v1alpha1", "w1"), client.WithSubResourceBody(sc))), auditObj(sc.Object))
	u = w("v1", "w1")
	logf("w1 after a scale update: %s; %s", auditErr(direct.Get(ctx, client.ObjectKeyFromObject(u), u)), managedOf(u))
	// A typed Scale through the unstructured client goes without
	// apiVersion and kind.
	logf("update widget scale, typeless: %s", auditErr(direct.SubResource("scale").Update(ctx, w("v1alpha1", "w1"),
		client.WithSubResourceBody(&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 2}}))))
	u = w("v1", "w1")
	logf("w1 after a typeless scale update: %s; %s", auditErr(direct.Get(ctx, client.ObjectKeyFromObject(u), u)), managedOf(u))
	logf("update widget scale, typeless, by another: %s", auditErr(direct.SubResource("scale").Update(ctx, w("v1alpha1", "w1"),
		client.WithSubResourceBody(&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}),
		client.FieldOwner("another"))))
	u = w("v1", "w1")
	logf("w1 after: %s; %s", auditErr(direct.Get(ctx, client.ObjectKeyFromObject(u), u)), managedOf(u))
	logf("patch widget scale: %s", auditErr(direct.SubResource("scale").Patch(ctx, w("v1alpha1", "w1"),
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":4}}`)))))
	u = w("v1", "w1")
	logf("w1 after a scale patch: %s; %s", auditErr(direct.Get(ctx, client.ObjectKeyFromObject(u), u)), managedOf(u))
	a := w("v1alpha1", "w2")
	logf("apply w2 as v1alpha1: %s", auditErr(direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(a), client.FieldOwner("alpha"))))
	a = w("v1", "w2")
	logf("get w2 as v1: %s; %s", auditErr(direct.Get(ctx, client.ObjectKeyFromObject(a), a)), auditObj(a.Object))
	logf("update w2's scale, typeless: %s", auditErr(direct.SubResource("scale").Update(ctx, w("v1alpha1", "w2"),
		client.WithSubResourceBody(&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "w2", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 2}}))))
	a = w("v1", "w2")
	logf("w2 after: %s; %s", auditErr(direct.Get(ctx, client.ObjectKeyFromObject(a), a)), managedOf(a))
	wl := &unstructured.UnstructuredList{}
	wl.SetGroupVersionKind(schemaGVK("crt-audit.example.com", "v1alpha1", "WidgetList"))
	logf("list widgets as v1alpha1: %s; %s %s %d", auditErr(direct.List(ctx, wl, client.InNamespace(ns))), wl.GetAPIVersion(), wl.GetKind(), len(wl.Items))
	pm := &metav1.PartialObjectMetadata{}
	pm.SetGroupVersionKind(schemaGVK("crt-audit.example.com", "v1alpha1", "Widget"))
	logf("get widget metadata as v1alpha1: %s; %s", auditErr(direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: "w1"}, pm)), auditObj(pm))
	logf("delete all widgets: %s", auditErr(direct.DeleteAllOf(ctx, w("v1alpha1", ""), client.InNamespace(ns))))
	logf("delete crd: %s", auditErr(direct.Delete(ctx, crd)))
}

func schemaGVK(g, v, k string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: g, Version: v, Kind: k}
}

// noRetryAfter hands a 429's Retry-After to seen and drops it, so that
// client-go does not retry.
type noRetryAfter struct {
	rt   http.RoundTripper
	seen func(string)
}

func (n noRetryAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := n.rt.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		n.seen(resp.Header.Get("Retry-After"))
		resp.Header.Del("Retry-After")
	}
	return resp, err
}

// startKubeGC runs kube-controller-manager's garbage collector against
// cfg's server until the returned function is called (which waits for
// it): kube-apiserver alone collects no garbage, serve runs its own.
func startKubeGC(t *testing.T, cfg *rest.Config) (stop func()) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, logr.Discard())
	started := make(chan struct{})
	close(started)
	gc, err := garbagecollector.NewGarbageCollector(ctx, cs, md, mapper, garbagecollector.DefaultIgnoredResources(),
		informerfactory.NewInformerFactory(informers.NewSharedInformerFactory(cs, 0), metadatainformer.NewSharedInformerFactory(md, 0)), started)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { gc.Run(ctx, 2, 10*time.Second) })
	wg.Go(func() { gc.Sync(ctx, cs.Discovery(), time.Second) })
	return func() {
		cancel()
		wg.Wait()
	}
}
