package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// TestKubeClientWrites runs the library's write options, server-side
// apply, subresource writes, Get at a resourceVersion and
// DeleteCollection's delete options against a real kube-apiserver and
// against listwatch serve. On each server every step is also taken by
// client-go v0.37.2 with the same options, and the two must agree: the
// same error (code, reason, message, causes, and the Is functions'
// classification) or the same stored object. The steps' transcripts of
// the two servers must be the same too.
func TestKubeClientWrites(t *testing.T) {
	t.Parallel()
	logs := map[string][]string{}
	for _, tg := range writesTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			var l []string
			for _, steps := range []func(*testing.T, *writesTarget) []string{
				writeOptionSteps, applySteps, subresourceSteps, getAtSteps, deleteCollectionSteps,
			} {
				l = append(l, steps(t, tg)...)
			}
			logs[tg.name] = l
		})
	}
	compareLogs(t, logs["serve"], logs["kube"])
}

// writesTarget is one server, its clients (the library's, recording what
// it sends; client-go's typed and dynamic) and a namespace of it.
type writesTarget struct {
	name string
	c    *client.Client
	sent *sentLog
	cs   kubernetes.Interface
	dyn  dynamic.Interface
	ns   string
}

// writesTargets returns kube-apiserver and listwatch serve, each with a
// namespace of the same name.
func writesTargets(t *testing.T) []*writesTarget {
	t.Helper()
	ks := kubeServer(t)
	kcfg, err := clientcmd.BuildConfigFromFlags("", ks.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "")
	ocfg, err := client.LoadKubeconfig(s.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	kube := newWritesTarget(t, "kube", ks.AdminConfig(), kcfg)
	kube.ns = kubeNamespace(t, kube.c)
	ours := newWritesTarget(t, "serve", ocfg, restConfig(t, s))
	ours.ns = kube.ns
	nss := client.NewResource[*corev1.Namespace](ours.c, client.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	if _, err := nss.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ours.ns}}); err != nil {
		t.Fatal(err)
	}
	return []*writesTarget{kube, ours}
}

func newWritesTarget(t *testing.T, name string, cfg *client.Config, rc *rest.Config) *writesTarget {
	t.Helper()
	tg := &writesTarget{name: name, sent: &sentLog{}}
	cfg.WrapTransport = tg.sent.wrap
	tg.c = kubeClient(t, cfg)
	tg.cs = kubernetes.NewForConfigOrDie(rc)
	tg.dyn = dynamic.NewForConfigOrDie(rc)
	return tg
}

// sentLog records the requests a client sends and the Content-Type of
// each answer.
type sentLog struct {
	mu   sync.Mutex // guards reqs
	reqs []sentRequest
}

type sentRequest struct {
	method, path, query      string
	contentType, accept, got string
}

func (l *sentLog) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		s := sentRequest{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery,
			contentType: r.Header.Get("Content-Type"), accept: r.Header.Get("Accept")}
		if resp != nil {
			s.got = resp.Header.Get("Content-Type")
		}
		l.mu.Lock()
		l.reqs = append(l.reqs, s)
		l.mu.Unlock()
		return resp, err
	})
}

func (l *sentLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

func (l *sentLog) last() sentRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.reqs) == 0 {
		return sentRequest{}
	}
	return l.reqs[len(l.reqs)-1]
}

// isProtobufCT says whether a Content-Type is protobuf.
func isProtobufCT(ct string) bool { return strings.HasPrefix(ct, wire.ContentTypeProtobuf) }

// wantProtobuf checks that the last request's body, or its answer, was
// protobuf, as both servers read and answer it for built-in kinds.
func (tg *writesTarget) wantProtobuf(t *testing.T, what string, answer bool) {
	t.Helper()
	r := tg.sent.last()
	ct := r.contentType
	if answer {
		ct = r.got
	}
	if !isProtobufCT(ct) {
		t.Errorf("%s: %s %s sent %q, answered %q", what, r.method, r.path, r.contentType, r.got)
	}
}

// outcome is an error as a transcript shows it: "ok", "local error" for
// a request refused before it was sent, or the Status with the library's
// or apimachinery's classification; the names given are replaced by
// <name>, and resourceVersions by N.
func outcome(err error, names ...string) string {
	if err == nil {
		return "ok"
	}
	var code int32
	var reason, msg string
	var causes []string
	var class []string
	is := func(name string, ours func(error) bool, theirs ...func(error) bool) {
		hit := ours(err)
		for _, f := range theirs {
			hit = hit || f(err)
		}
		if hit {
			class = append(class, name)
		}
	}
	var st *wire.Status
	var as apierrors.APIStatus
	switch {
	case errors.Is(err, client.ErrRequest):
		return "local error"
	case errors.As(err, &st):
		code, reason, msg = st.Code, string(st.Reason), st.Message
		if st.Details != nil {
			for _, c := range st.Details.Causes {
				causes = append(causes, c.Type+" "+c.Field+" "+c.Message)
			}
		}
		is("NotFound", client.IsNotFound)
		is("Conflict", client.IsConflict)
		is("Invalid", client.IsInvalid)
		is("BadRequest", client.IsBadRequest)
		is("Timeout", client.IsTimeout)
	case errors.As(err, &as):
		s := as.Status()
		code, reason, msg = s.Code, string(s.Reason), s.Message
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				causes = append(causes, string(c.Type)+" "+c.Field+" "+c.Message)
			}
		}
		is("NotFound", apierrors.IsNotFound)
		is("Conflict", apierrors.IsConflict)
		is("Invalid", apierrors.IsInvalid)
		is("BadRequest", apierrors.IsBadRequest)
		is("Timeout", apierrors.IsTimeout, apierrors.IsServerTimeout)
	default:
		// client-go refuses a bad name before sending, with a plain error.
		if strings.Contains(err.Error(), "invalid resource name") {
			return "local error"
		}
		return "error: " + err.Error()
	}
	for _, n := range names {
		msg = strings.ReplaceAll(msg, n, "<name>")
	}
	msg = numbersRE.ReplaceAllString(msg, "N")
	return fmt.Sprintf("%d %s %q causes=%q is=%v", code, reason, msg, causes, class)
}

var numbersRE = regexp.MustCompile(`[0-9]{3,}`)

// same records a step that the library and client-go took alike, and
// requires the same outcome of both.
func same(t *testing.T, log *[]string, step string, ours, theirs string) {
	t.Helper()
	if ours != theirs {
		t.Errorf("%s:\n listwatch's client: %s\n client-go:          %s", step, ours, theirs)
	}
	*log = append(*log, step+": "+ours)
}

// pick is the JSON of obj's fields at the dotted paths, managedFields
// without their times: what two writes' results are compared by.
func pick(t *testing.T, obj any, paths ...string) string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, p := range paths {
		var v any = m
		for _, k := range strings.Split(p, ".") {
			mm, _ := v.(map[string]any)
			v = mm[k]
		}
		if entries, ok := v.([]any); ok && strings.HasSuffix(p, "managedFields") {
			for _, e := range entries {
				delete(e.(map[string]any), "time")
			}
			// Kube orders entries by operation, then time in seconds,
			// then manager: the order of two managers' entries depends on
			// whether their writes fell in the same second.
			slices.SortStableFunc(entries, func(a, b any) int {
				return strings.Compare(fmt.Sprint(a.(map[string]any)["manager"]), fmt.Sprint(b.(map[string]any)["manager"]))
			})
		}
		out[p] = v
	}
	return jsonOf(out)
}

var (
	cmGVR          = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	podGVR         = client.GroupVersionResource{Version: "v1", Resource: "pods"}
	saGVR          = client.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	deploymentsGVR = client.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func writesConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"t": "writes"}}, Data: map[string]string{"k": "v"}}
}

// writeOptionSteps: dryRun, fieldManager and fieldValidation on creates,
// updates and patches; force on a merge patch.
func writeOptionSteps(t *testing.T, tg *writesTarget) []string {
	ctx, ns := t.Context(), tg.ns
	cms := client.NewResource[*corev1.ConfigMap](tg.c, cmGVR).Namespace(ns)
	theirs := tg.cs.CoreV1().ConfigMaps(ns)
	var log []string

	// A dry-run create answers the object and stores nothing.
	o, oerr := cms.Create(ctx, writesConfigMap("dry"), client.DryRunAll)
	g, gerr := theirs.Create(ctx, writesConfigMap("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	same(t, &log, "dry-run create", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		same(t, &log, "dry-run create answers", pick(t, o, "metadata.name", "metadata.resourceVersion", "data"),
			pick(t, g, "metadata.name", "metadata.resourceVersion", "data"))
	}
	_, oerr = cms.Get(ctx, "dry")
	_, gerr = theirs.Get(ctx, "dry", metav1.GetOptions{})
	same(t, &log, "after a dry-run create", outcome(oerr), outcome(gerr))

	// A field manager names the managedFields entry.
	o, oerr = cms.Create(ctx, writesConfigMap("owned-ours"), client.FieldOwner("alice"))
	g, gerr = theirs.Create(ctx, writesConfigMap("owned-cg"), metav1.CreateOptions{FieldManager: "alice"})
	same(t, &log, "create by alice", outcome(oerr), outcome(gerr))
	if oerr != nil || gerr != nil {
		t.Fatal("cannot go on")
	}
	same(t, &log, "created by alice", pick(t, o, "data", "metadata.managedFields"), pick(t, g, "data", "metadata.managedFields"))

	// A dry-run update answers the change and keeps the stored object.
	o.Data["k"], g.Data["k"] = "changed", "changed"
	o2, oerr := cms.Update(ctx, o, client.DryRunAll, client.FieldOwner("bob"))
	g2, gerr := theirs.Update(ctx, g, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "bob"})
	same(t, &log, "dry-run update", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		same(t, &log, "dry-run update answers", pick(t, o2, "data", "metadata.managedFields"), pick(t, g2, "data", "metadata.managedFields"))
	}
	o3, oerr := cms.Get(ctx, "owned-ours")
	g3, gerr := theirs.Get(ctx, "owned-cg", metav1.GetOptions{})
	if oerr != nil || gerr != nil {
		t.Fatalf("get: %v, %v", oerr, gerr)
	}
	same(t, &log, "after a dry-run update", pick(t, o3, "data", "metadata.managedFields"), pick(t, g3, "data", "metadata.managedFields"))

	// A real update and a merge patch, each by its manager.
	o3.Data["k"], g3.Data["k"] = "updated", "updated"
	o4, oerr := cms.Update(ctx, o3, client.FieldOwner("bob"))
	g4, gerr := theirs.Update(ctx, g3, metav1.UpdateOptions{FieldManager: "bob"})
	same(t, &log, "update by bob", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		same(t, &log, "updated by bob", pick(t, o4, "data", "metadata.managedFields"), pick(t, g4, "data", "metadata.managedFields"))
	}
	patch := []byte(`{"data":{"p":"1"}}`)
	o5, oerr := cms.Patch(ctx, "owned-ours", client.MergePatch, patch, client.FieldOwner("carol"))
	g5, gerr := theirs.Patch(ctx, "owned-cg", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "carol"})
	same(t, &log, "merge patch by carol", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		same(t, &log, "patched by carol", pick(t, o5, "data", "metadata.managedFields"), pick(t, g5, "data", "metadata.managedFields"))
	}

	// fieldValidation, on an object with a field ConfigMap does not have.
	ucms := client.NewResource[*object.Unstructured](tg.c, cmGVR).Namespace(ns)
	utheirs := tg.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	const bogus = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"data":{"k":"v"},"bogus":1}`
	for _, mode := range []string{"Strict", "Warn", "Ignore", "strict", "Bogus"} {
		_, oerr := ucms.Create(ctx, obj(t, bogus), client.FieldValidation(mode), client.DryRunAll)
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(bogus)); err != nil {
			t.Fatal(err)
		}
		_, gerr := utheirs.Create(ctx, u, metav1.CreateOptions{FieldValidation: mode, DryRun: []string{metav1.DryRunAll}})
		same(t, &log, "fieldValidation "+mode+" with an unknown field", outcome(oerr), outcome(gerr))
	}

	// Field managers kube refuses.
	long := strings.Repeat("m", 129)
	_, oerr = cms.Create(ctx, writesConfigMap("long"), client.FieldOwner(long))
	_, gerr = theirs.Create(ctx, writesConfigMap("long"), metav1.CreateOptions{FieldManager: long})
	same(t, &log, "field manager of 129 bytes", outcome(oerr), outcome(gerr))
	_, oerr = cms.Patch(ctx, "owned-ours", client.MergePatch, patch, client.FieldOwner("tab\there"))
	_, gerr = theirs.Patch(ctx, "owned-ours", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "tab\there"})
	same(t, &log, "field manager with a tab", outcome(oerr), outcome(gerr))

	// force: the library refuses it unsent on a merge patch; kube refuses
	// it (422) when client-go sends it.
	n := tg.sent.count()
	_, oerr = cms.Patch(ctx, "owned-ours", client.MergePatch, patch, client.FieldOwner("carol"), client.ForceOwnership)
	if tg.sent.count() != n {
		t.Errorf("a merge patch with ForceOwnership was sent")
	}
	log = append(log, "force on a merge patch, listwatch's client: "+outcome(oerr))
	force := true
	_, gerr = theirs.Patch(ctx, "owned-ours", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "carol", Force: &force})
	log = append(log, "force on a merge patch, client-go: "+outcome(gerr))
	if !apierrors.IsInvalid(gerr) {
		t.Errorf("force on a merge patch: %v, want 422", gerr)
	}
	// On a create kube ignores force (CreateOptions has no such field).
	_, oerr = cms.Create(ctx, writesConfigMap("forced"), client.DryRunAll, client.ForceOwnership)
	log = append(log, "force on a create, listwatch's client: "+outcome(oerr))
	gerr = tg.cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("configmaps").
		Param("force", "true").Param("dryRun", "All").Body(writesConfigMap("forced")).Do(ctx).Error()
	log = append(log, "force on a create, client-go: "+outcome(gerr))
	return log
}

// applyConfigMap is the apply body of a ConfigMap with data.
// Keys are quoted: unquoted, YAML reads y as true.
func applyConfigMap(name string, data map[string]string) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  labels:\n    t: writes\n")
	if len(data) > 0 {
		b.WriteString("data:\n")
	}
	for k, v := range data {
		b.WriteString("  " + strconv.Quote(k) + ": " + strconv.Quote(v) + "\n")
	}
	return []byte(b.String())
}

func applyConfigMapAC(name, ns string, data map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(name, ns).WithLabels(map[string]string{"t": "writes"}).WithData(data)
}

// applySteps: apply creating, a conflict, force, no manager, a status
// apply; the body is YAML in a protobuf Resource too.
func applySteps(t *testing.T, tg *writesTarget) []string {
	ctx, ns := t.Context(), tg.ns
	cms := client.NewResource[*corev1.ConfigMap](tg.c, cmGVR).Namespace(ns)
	theirs := tg.cs.CoreV1().ConfigMaps(ns)
	var log []string
	fields := []string{"metadata.labels", "data", "metadata.managedFields"}

	_, oerr := cms.Apply(ctx, "ap-ours", applyConfigMap("ap-ours", map[string]string{"x": "1"}))
	_, gerr := theirs.Apply(ctx, applyConfigMapAC("ap-ours", ns, map[string]string{"x": "1"}), metav1.ApplyOptions{})
	same(t, &log, "apply without a field manager", outcome(oerr), outcome(gerr))

	o, oerr := cms.Apply(ctx, "ap-ours", applyConfigMap("ap-ours", map[string]string{"x": "1", "y": "2"}), client.FieldOwner("alice"))
	g, gerr := theirs.Apply(ctx, applyConfigMapAC("ap-cg", ns, map[string]string{"x": "1", "y": "2"}), metav1.ApplyOptions{FieldManager: "alice"})
	same(t, &log, "apply creates", outcome(oerr), outcome(gerr))
	if oerr != nil || gerr != nil {
		t.Fatal("cannot go on")
	}
	same(t, &log, "applied by alice", pick(t, o, fields...), pick(t, g, fields...))
	r := tg.sent.last()
	log = append(log, fmt.Sprintf("apply sent %s %s?%s, Content-Type %s", r.method, strings.TrimPrefix(r.path, "/api/v1/namespaces/"+ns), r.query, r.contentType))
	if !isProtobufCT(r.accept) {
		t.Errorf("apply in a protobuf Resource asked for %q", r.accept)
	}
	tg.wantProtobuf(t, "apply's answer", true)

	_, oerr = cms.Apply(ctx, "ap-ours", applyConfigMap("ap-ours", map[string]string{"x": "9"}), client.FieldOwner("bob"))
	_, gerr = theirs.Apply(ctx, applyConfigMapAC("ap-cg", ns, map[string]string{"x": "9"}), metav1.ApplyOptions{FieldManager: "bob"})
	same(t, &log, "apply of a field alice owns", outcome(oerr), outcome(gerr))
	if !client.IsConflict(oerr) {
		t.Errorf("conflict: %v is not IsConflict", oerr)
	}

	o, oerr = cms.Apply(ctx, "ap-ours", applyConfigMap("ap-ours", map[string]string{"x": "9"}), client.FieldOwner("bob"), client.ForceOwnership)
	g, gerr = theirs.Apply(ctx, applyConfigMapAC("ap-cg", ns, map[string]string{"x": "9"}), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	same(t, &log, "forced apply", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		same(t, &log, "forced by bob", pick(t, o, fields...), pick(t, g, fields...))
	}

	// alice no longer applies y: it goes; x is bob's now and stays.
	o, oerr = cms.Apply(ctx, "ap-ours", applyConfigMap("ap-ours", map[string]string{}), client.FieldOwner("alice"))
	g, gerr = theirs.Apply(ctx, applyConfigMapAC("ap-cg", ns, map[string]string{}), metav1.ApplyOptions{FieldManager: "alice"})
	same(t, &log, "alice applies less", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		same(t, &log, "after alice's smaller apply", pick(t, o, fields...), pick(t, g, fields...))
	}

	// A dry-run apply of a new name creates nothing.
	_, oerr = cms.Apply(ctx, "ap-dry", applyConfigMap("ap-dry", map[string]string{"a": "b"}), client.FieldOwner("alice"), client.DryRunAll)
	_, gerr = theirs.Apply(ctx, applyConfigMapAC("ap-dry", ns, map[string]string{"a": "b"}), metav1.ApplyOptions{FieldManager: "alice", DryRun: []string{metav1.DryRunAll}})
	same(t, &log, "dry-run apply", outcome(oerr), outcome(gerr))
	_, oerr = cms.Get(ctx, "ap-dry")
	_, gerr = theirs.Get(ctx, "ap-dry", metav1.GetOptions{})
	same(t, &log, "after a dry-run apply", outcome(oerr), outcome(gerr))

	// An apply of the status subresource.
	pods := client.NewResource[*corev1.Pod](tg.c, podGVR).Namespace(ns)
	for _, n := range []string{"aps-ours", "aps-cg"} {
		if _, err := pods.Create(ctx, writesPod(n)); err != nil {
			t.Fatal(err)
		}
	}
	status := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"aps-ours"},"status":{"phase":"Running","message":"applied"}}`
	op, oerr := pods.Subresource("status").Apply(ctx, "aps-ours", []byte(status), client.FieldOwner("kubelet"))
	gp, gerr := tg.cs.CoreV1().Pods(ns).ApplyStatus(ctx, corev1ac.Pod("aps-cg", ns).WithStatus(
		corev1ac.PodStatus().WithPhase(corev1.PodRunning).WithMessage("applied")), metav1.ApplyOptions{FieldManager: "kubelet"})
	same(t, &log, "status apply", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		pf := []string{"status.phase", "status.message", "spec.containers", "metadata.managedFields"}
		same(t, &log, "status applied", pick(t, op, pf...), pick(t, gp, pf...))
	}
	return log
}

func writesPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "writes"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// subresourceSteps: status updates, scale, eviction, binding and token
// through Subresource; names that would address a subresource refused.
func subresourceSteps(t *testing.T, tg *writesTarget) []string {
	ctx, ns := t.Context(), tg.ns
	pods := client.NewResource[*corev1.Pod](tg.c, podGVR).Namespace(ns)
	theirPods := tg.cs.CoreV1().Pods(ns)
	var log []string

	// Status: an update of the status subresource changes the status only.
	for _, n := range []string{"st-ours", "st-cg", "ev-ours", "ev-cg", "ev2-ours", "bd-ours", "bd-cg"} {
		if _, err := pods.Create(ctx, writesPod(n)); err != nil {
			t.Fatal(err)
		}
	}
	status := pods.Subresource("status")
	o, oerr := status.Get(ctx, "st-ours")
	g, gerr := theirPods.Get(ctx, "st-cg", metav1.GetOptions{})
	if oerr != nil || gerr != nil {
		t.Fatalf("get: %v, %v", oerr, gerr)
	}
	for _, p := range []*corev1.Pod{o, g} {
		p.Status.Phase, p.Status.Message = corev1.PodRunning, "one"
		p.Spec.ActiveDeadlineSeconds = pointerTo[int64](60) // not the status: ignored
	}
	o, oerr = status.Update(ctx, o, client.FieldOwner("kubelet"))
	g, gerr = theirPods.UpdateStatus(ctx, g, metav1.UpdateOptions{FieldManager: "kubelet"})
	same(t, &log, "status update", outcome(oerr), outcome(gerr))
	if oerr != nil || gerr != nil {
		t.Fatal("cannot go on")
	}
	pf := []string{"status.phase", "status.message", "spec.activeDeadlineSeconds", "metadata.managedFields"}
	same(t, &log, "status updated", pick(t, o, pf...), pick(t, g, pf...))
	// The copy has learned the kind from the answer: its next write is
	// protobuf.
	o.Status.Message, g.Status.Message = "two", "two"
	o, oerr = status.Update(ctx, o)
	tg.wantProtobuf(t, "second status update", false)
	g, gerr = theirPods.UpdateStatus(ctx, g, metav1.UpdateOptions{})
	same(t, &log, "second status update", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		same(t, &log, "status updated again", pick(t, o, "status.message"), pick(t, g, "status.message"))
	}

	// Scale: deployments/scale is autoscaling/v1 Scale.
	deps := client.NewResource[*appsv1.Deployment](tg.c, deploymentsGVR).Namespace(ns)
	for _, n := range []string{"web-ours", "web-cg"} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: appsv1.DeploymentSpec{
			Replicas: pointerTo[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}
		if _, err := deps.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	scale := client.NewResource[*autoscalingv1.Scale](tg.c, deploymentsGVR).Namespace(ns).Subresource("scale")
	sc, oerr := scale.Get(ctx, "web-ours")
	tg.wantProtobuf(t, "scale get", true)
	gs, gerr := tg.cs.AppsV1().Deployments(ns).GetScale(ctx, "web-cg", metav1.GetOptions{})
	same(t, &log, "get scale", outcome(oerr), outcome(gerr))
	if oerr != nil || gerr != nil {
		t.Fatal("cannot go on")
	}
	log = append(log, fmt.Sprintf("scale's kind: %s %s", sc.APIVersion, sc.Kind))
	same(t, &log, "scale", pick(t, sc, "spec", "status"), pick(t, gs, "spec", "status"))
	sc.Spec.Replicas, gs.Spec.Replicas = 3, 3
	sc, oerr = scale.Update(ctx, sc)
	tg.wantProtobuf(t, "scale update", false)
	gs, gerr = tg.cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web-cg", gs, metav1.UpdateOptions{})
	same(t, &log, "update scale", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		same(t, &log, "scaled", pick(t, sc, "spec", "status"), pick(t, gs, "spec", "status"))
	}
	od, oerr := deps.Get(ctx, "web-ours")
	gd, gerr := tg.cs.AppsV1().Deployments(ns).Get(ctx, "web-cg", metav1.GetOptions{})
	if oerr != nil || gerr != nil {
		t.Fatalf("get: %v, %v", oerr, gerr)
	}
	same(t, &log, "deployment after scaling", pick(t, od, "spec.replicas"), pick(t, gd, "spec.replicas"))

	// Eviction: kube answers a Status, which Create returns as the zero T.
	evictions := client.NewResource[*policyv1.Eviction](tg.c, podGVR).Namespace(ns).Subresource("eviction")
	oe, oerr := evictions.Create(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "ev-ours"}})
	tg.wantProtobuf(t, "eviction's Status", true)
	gerr = theirPods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "ev-cg"}})
	same(t, &log, "eviction", outcome(oerr), outcome(gerr))
	if oe != nil {
		t.Errorf("eviction answered %+v, want the zero T", oe)
	}
	_, oerr = pods.Get(ctx, "ev-ours")
	_, gerr = theirPods.Get(ctx, "ev-cg", metav1.GetOptions{})
	same(t, &log, "evicted pod", outcome(oerr, "ev-ours"), outcome(gerr, "ev-cg"))
	// An eviction that names its kind is protobuf once the server has
	// answered the subresource in protobuf.
	_, oerr = evictions.Create(ctx, &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Name: "ev2-ours"}})
	tg.wantProtobuf(t, "eviction with its kind", false)
	log = append(log, "eviction with its kind: "+outcome(oerr))
	_, oerr = evictions.Create(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "missing"}})
	gerr = theirPods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "missing"}})
	same(t, &log, "eviction of a missing pod", outcome(oerr), outcome(gerr))
	_, oerr = evictions.Create(ctx, &policyv1.Eviction{})
	log = append(log, "eviction without a name: "+outcome(oerr))

	// Binding: kube answers a Status; the pod is bound.
	bindings := client.NewResource[*corev1.Binding](tg.c, podGVR).Namespace(ns).Subresource("binding")
	target := corev1.ObjectReference{Kind: "Node", Name: "node-writes"}
	_, oerr = bindings.Create(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bd-ours"}, Target: target})
	tg.wantProtobuf(t, "binding's Status", true)
	gerr = theirPods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bd-cg"}, Target: target}, metav1.CreateOptions{})
	same(t, &log, "binding", outcome(oerr), outcome(gerr))
	op, oerr := pods.Get(ctx, "bd-ours")
	gp, gerr := theirPods.Get(ctx, "bd-cg", metav1.GetOptions{})
	if oerr != nil || gerr != nil {
		t.Fatalf("get: %v, %v", oerr, gerr)
	}
	same(t, &log, "bound pod", pick(t, op, "spec.nodeName"), pick(t, gp, "spec.nodeName"))

	// Token: a TokenRequest posted to serviceaccounts/{name}/token.
	sas := client.NewResource[*corev1.ServiceAccount](tg.c, saGVR).Namespace(ns)
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}); err != nil {
		t.Fatal(err)
	}
	tokens := client.NewResource[*authenticationv1.TokenRequest](tg.c, saGVR).Namespace(ns).Subresource("token")
	spec := authenticationv1.TokenRequestSpec{Audiences: []string{"writes"}, ExpirationSeconds: pointerTo[int64](3600)}
	ot, oerr := tokens.Create(ctx, &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "robot"}, Spec: spec})
	tg.wantProtobuf(t, "token request's answer", true)
	gt, gerr := tg.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	same(t, &log, "token request", outcome(oerr), outcome(gerr))
	if oerr == nil && gerr == nil {
		same(t, &log, "token", pick(t, ot, "spec"), pick(t, gt, "spec"))
		if ot.Status.Token == "" || gt.Status.Token == "" {
			t.Errorf("tokens %q, %q", ot.Status.Token, gt.Status.Token)
		}
	}
	_, oerr = tokens.Create(ctx, &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}, Spec: spec})
	_, gerr = tg.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	same(t, &log, "token of a missing service account", outcome(oerr), outcome(gerr))

	// A name with a '/' would address a subresource: refused unsent, as
	// client-go refuses it.
	n := tg.sent.count()
	_, oerr = pods.Patch(ctx, "st-ours/status", client.MergePatch, []byte(`{"status":{"message":"sneaky"}}`))
	_, gerr = theirPods.Patch(ctx, "st-ours/status", types.MergePatchType, []byte(`{"status":{"message":"sneaky"}}`), metav1.PatchOptions{})
	same(t, &log, "patch of a name with a slash", outcome(oerr), outcome(gerr))
	_, oerr = pods.Get(ctx, "..")
	_, gerr = theirPods.Get(ctx, "..", metav1.GetOptions{})
	same(t, &log, "get of ..", outcome(oerr), outcome(gerr))
	_, oerr = status.List(ctx, wire.ListOptions{})
	log = append(log, "list of a subresource: "+outcome(oerr))
	if tg.sent.count() != n {
		t.Errorf("refused requests were sent")
	}
	return log
}

// getAtSteps: Get with a resourceVersion, from the watch cache
// (configmaps) and, on kube, from etcd (podtemplates, which the shared
// kube-apiserver does not cache: a resourceVersion etcd has not reached
// fails at once there, where a cache waits three seconds and asks for a
// retry).
func getAtSteps(t *testing.T, tg *writesTarget) []string {
	ctx, ns := t.Context(), tg.ns
	cms := client.NewResource[*corev1.ConfigMap](tg.c, cmGVR).Namespace(ns)
	theirs := tg.cs.CoreV1().ConfigMaps(ns)
	var log []string
	created, err := cms.Create(ctx, writesConfigMap("rv"))
	if err != nil {
		t.Fatal(err)
	}
	rv := created.ResourceVersion
	for _, tc := range []struct{ name, rv string }{
		{"its own resourceVersion", rv}, // waits until the cache has it
		{"0", "0"},                      // then the cache answers it
		{"not a number", "x"},
	} {
		o, oerr := cms.Get(ctx, "rv", client.ResourceVersion(tc.rv))
		g, gerr := theirs.Get(ctx, "rv", metav1.GetOptions{ResourceVersion: tc.rv})
		same(t, &log, "get at "+tc.name, outcome(oerr), outcome(gerr))
		if oerr == nil && gerr == nil && (o.ResourceVersion != rv || g.ResourceVersion != rv) {
			t.Errorf("get at %s: resourceVersions %s and %s, want %s", tc.name, o.ResourceVersion, g.ResourceVersion, rv)
		}
		if r := tg.sent.last(); r.query != "resourceVersion="+tc.rv {
			t.Errorf("get at %s sent ?%s", tc.name, r.query)
		}
	}

	if tg.name != "kube" {
		// serve caches every resource: there the wait, and the retries
		// both clients make after its Retry-After, take a minute.
		return log
	}
	pts := client.NewResource[*corev1.PodTemplate](tg.c, client.GroupVersionResource{Version: "v1", Resource: kubeUncachedResource}).Namespace(ns)
	pt, err := pts.Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "rv"},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(pt.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	far := strconv.FormatInt(n+1_000_000, 10)
	_, oerr := pts.Get(ctx, "rv", client.ResourceVersion(far))
	_, gerr := tg.cs.CoreV1().PodTemplates(ns).Get(ctx, "rv", metav1.GetOptions{ResourceVersion: far})
	var kubeOnly []string
	same(t, &kubeOnly, "get of an uncached resource at a resourceVersion not reached", outcome(oerr), outcome(gerr))
	t.Log(kubeOnly[0])
	return log
}

// deleteCollectionSteps: DeleteCollection's delete options reach the
// server: dryRun deletes nothing, a bad propagation policy is refused.
func deleteCollectionSteps(t *testing.T, tg *writesTarget) []string {
	ctx, ns := t.Context(), tg.ns
	cms := client.NewResource[*corev1.ConfigMap](tg.c, cmGVR).Namespace(ns)
	theirs := tg.cs.CoreV1().ConfigMaps(ns)
	var log []string
	for _, n := range []string{"dc-1", "dc-2", "dc-3"} {
		cm := writesConfigMap(n)
		cm.Labels["dc"] = "yes"
		if _, err := cms.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	sel := wire.ListOptions{LabelSelector: "dc=yes"}
	left := func() string {
		l, err := cms.List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(len(l.Items), " left")
	}
	oerr := cms.DeleteCollection(ctx, wire.DeleteOptions{DryRun: []string{"All"}}, sel)
	ol := left()
	gerr := theirs.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{LabelSelector: "dc=yes"})
	same(t, &log, "dry-run delete collection", outcome(oerr)+", "+ol, outcome(gerr)+", "+left())

	sideways := "Sideways"
	oerr = cms.DeleteCollection(ctx, wire.DeleteOptions{PropagationPolicy: &sideways}, sel)
	gerr = theirs.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: (*metav1.DeletionPropagation)(&sideways)}, metav1.ListOptions{LabelSelector: "dc=yes"})
	same(t, &log, "delete collection with a bad propagation policy", outcome(oerr)+", "+left(), outcome(gerr)+", "+left())

	background := "Background"
	oerr = cms.DeleteCollection(ctx, wire.DeleteOptions{PropagationPolicy: &background}, sel)
	log = append(log, "delete collection: "+outcome(oerr)+", "+left())
	return log
}
