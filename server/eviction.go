package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/util/dryrun"
	"k8s.io/client-go/util/retry"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/policy"
	podstorage "k8s.io/kubernetes/pkg/registry/core/pod/storage"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// The pods/eviction subresource: POST a policy/v1 Eviction to delete a pod
// unless that would violate its PodDisruptionBudget. kube's EvictionREST
// (pkg/registry/core/pod/storage/eviction.go) runs over kube's generic
// registry Store, which this server does not have, so its rules are
// followed here over the store, with kube's helpers where they are
// exported (retry backoff, pod readiness, the PDB condition):
//
//   - a pod not running (pending, succeeded, failed) or already deleting
//     is deleted without looking at budgets (at the resourceVersion read,
//     unless terminal or deleting, retried on conflict);
//   - no budget selecting the pod: deleted; more than one: kube's 500;
//   - an unready pod is deleted when the budget's
//     unhealthyPodEvictionPolicy is AlwaysAllow or the budget is
//     currently healthy (at the resourceVersion read: a change meanwhile
//     is kube's 429);
//   - otherwise the budget must have observed its generation and allow a
//     disruption (429 TooManyRequests with a DisruptionBudget cause, 403
//     for negative or overfull budgets); its disruptionsAllowed is
//     decremented and the pod recorded in disruptedPods, retried on
//     conflict, and the pod is deleted;
//   - before the delete the pod gets the DisruptionTarget condition;
//     DeleteOptions (preconditions, grace period, dry run) apply to the
//     delete, which is this server's DELETE (deleteflow.go).

var evictionKind = &typedKind{
	scheme:   legacyscheme.Scheme,
	external: policyv1.SchemeGroupVersion.WithKind("Eviction"),
	internal: schema.GroupVersionKind{Group: policy.GroupName, Version: runtime.APIVersionInternal, Kind: "Eviction"},
}

// evictionResource is how an Eviction body is checked (kind, apiVersion,
// namespace).
var evictionResource = &resource{group: policy.GroupName, version: "v1", plural: "pods",
	kind: "Eviction", namespaced: true, virtual: true}

var (
	evictionKindV1beta1 = &typedKind{
		scheme:   legacyscheme.Scheme,
		external: policyv1beta1.SchemeGroupVersion.WithKind("Eviction"),
		internal: evictionKind.internal,
	}
	evictionResourceV1beta1 = &resource{group: policy.GroupName, version: "v1beta1", plural: "pods",
		kind: "Eviction", namespaced: true, virtual: true}
)

var v1Eviction = policyv1.SchemeGroupVersion.WithKind("Eviction")

// evict answers POST on pods/<name>/eviction: 201 with a Success Status
// when the pod is deleted (or would be, in a dry run).
func (c *call) evict() error {
	if err := c.checkWriteOptions("CreateOptions"); err != nil {
		return err
	}
	q := c.r.URL.Query()
	// kube's EvictionREST accepts policy/v1 and policy/v1beta1 bodies;
	// another apiVersion is the scheme's "no kind" 400.
	b, err := c.readBody()
	if err != nil {
		return err
	}
	c.r.Body = io.NopCloser(bytes.NewReader(b))
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	_ = json.Unmarshal(b, &head)
	res, kind := evictionResource, evictionKind
	gv, k := head.APIVersion, head.Kind
	if gv == "" {
		gv = "policy/v1"
	}
	if k == "" {
		k = "Eviction"
	}
	if gv == "policy/v1beta1" {
		res, kind = evictionResourceV1beta1, evictionKindV1beta1
	}
	if (gv != "policy/v1" && gv != "policy/v1beta1" || k != "Eviction") && isJSONContent(c.r.Header.Get("Content-Type")) {
		pgv, _ := schema.ParseGroupVersion(gv)
		return wire.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a Eviction: no kind %q is registered for version %q in scheme \"pkg/runtime/scheme.go:111\"",
			k, pgv.Version, k, gv))
	}
	pods := c.res
	c.res = res
	d, err := c.decodeBody()
	var obj runtime.Object
	if err == nil {
		obj, err = c.decodeTyped(kind, d)
	}
	c.res = pods
	if err != nil {
		return err
	}
	// kube's create handler: mutating admission over the Eviction (kind
	// as sent, resource pods, subresource eviction); EvictionREST runs the
	// validating chain once it has checked the body (evictPod).
	c.evictAttrs = c.subAttrs(admission.Create, kind.external, "eviction", obj, &metav1.CreateOptions{
		TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"},
		DryRun:   q["dryRun"], FieldManager: q.Get("fieldManager"), FieldValidation: q.Get("fieldValidation")}, len(q["dryRun"]) > 0)
	c.evictOI = admission.NewObjectInterfacesFromScheme(kind.scheme)
	if err := c.subMutate(c.evictAttrs, c.evictOI); err != nil {
		return err
	}
	st, err := c.evictPod(c.r.Context(), obj.(*policy.Eviction), c.r.URL.Query()["dryRun"])
	if err != nil {
		return connectStatus(err)
	}
	code := http.StatusCreated
	if st.Code != 0 {
		code = int(st.Code)
	}
	return c.writeStatus(code, &wire.Status{TypeMeta: wire.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: st.Status, Message: st.Message, Code: int32(code)})
}

// asKubeError turns this server's Status errors into kube's, so kube's
// conflict checks and retries see them.
func asKubeError(err error) error {
	var st *wire.Status
	if !errors.As(err, &st) {
		return err
	}
	b, merr := json.Marshal(st)
	if merr != nil {
		return err
	}
	var ks metav1.Status
	if json.Unmarshal(b, &ks) != nil {
		return err
	}
	return &apierrors.StatusError{ErrStatus: ks}
}

func (c *call) evictPod(ctx context.Context, ev *policy.Eviction, queryDryRun []string) (*metav1.Status, error) {
	name := c.name
	if name != ev.Name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if ev.DeleteOptions != nil && ev.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential != nil &&
		*ev.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential {
		return nil, apierrors.NewInvalid(v1Eviction.GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions").Child("ignoreStoreReadErrorWithClusterBreakingPotential"), true,
				"can not be set for pod eviction, try after removing the option"),
		})
	}
	orig, err := propagateDryRun(ev, queryDryRun)
	if err != nil {
		return nil, err
	}
	if c.evictAttrs != nil {
		if err := c.subValidate(c.evictAttrs, c.evictOI); err != nil {
			return nil, asKubeError(err)
		}
	}

	var pod *api.Pod
	deleted := false
	shouldRetry := apierrors.IsConflict
	if !resourceVersionIsUnset(orig) {
		shouldRetry = func(error) bool { return false }
	}
	err = retry.OnError(podstorage.EvictionsRetry, shouldRetry, func() error {
		if pod, err = c.readPod(ctx, name); err != nil {
			return err
		}
		if !canIgnorePDB(pod) {
			return nil
		}
		opts := orig
		if shouldEnforceResourceVersion(pod) && resourceVersionIsUnset(orig) {
			opts = opts.DeepCopy()
			setPreconditionsResourceVersion(opts, pod.ResourceVersion)
		}
		if err := c.addConditionAndDeletePod(ctx, name, opts); err != nil {
			return err
		}
		deleted = true
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case deleted:
		return &metav1.Status{Status: metav1.StatusSuccess}, nil
	}

	var rtStatus *metav1.Status
	var pdbName string
	updateDeletionOptions := false
	err = func() error {
		pdbs, err := c.podDisruptionBudgets(ctx, pod)
		if err != nil {
			return err
		}
		if len(pdbs) > 1 {
			rtStatus = &metav1.Status{Status: metav1.StatusFailure, Code: 500,
				Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}
			return nil
		}
		if len(pdbs) == 0 {
			return nil
		}
		pdb := &pdbs[0]
		pdbName = pdb.Name
		if !podutil.IsPodReady(pod) {
			if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
				updateDeletionOptions = true
				return nil
			}
			if pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
				updateDeletionOptions = true
				return nil
			}
		}
		refresh := false
		return retry.RetryOnConflict(podstorage.EvictionsRetry, func() error {
			if refresh {
				if pdb, err = c.readPDB(ctx, pod.Namespace, pdbName); err != nil {
					return err
				}
			}
			if err := c.checkAndDecrement(ctx, pod.Name, *pdb, dryrun.IsDryRun(orig.DryRun)); err != nil {
				refresh = true
				return err
			}
			return nil
		})
	}()
	if wait.Interrupted(err) {
		err = apierrors.NewTimeoutError(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", pdbName), 10)
	}
	if err != nil {
		return nil, err
	}
	if rtStatus != nil {
		return rtStatus, nil
	}
	opts := orig
	if updateDeletionOptions {
		opts = opts.DeepCopy()
		setPreconditionsResourceVersion(opts, pod.ResourceVersion)
	}
	if err := c.addConditionAndDeletePod(ctx, name, opts); err != nil {
		if apierrors.IsConflict(err) && updateDeletionOptions &&
			(orig.Preconditions == nil || orig.Preconditions.ResourceVersion == nil) {
			return nil, createTooManyRequestsError(pdbName)
		}
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}

// propagateDryRun is kube's: the query's dryRun goes into the Eviction's
// DeleteOptions; both set and different is an error.
func propagateDryRun(ev *policy.Eviction, dryRun []string) (*metav1.DeleteOptions, error) {
	if ev.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: dryRun}, nil
	}
	if len(ev.DeleteOptions.DryRun) == 0 {
		ev.DeleteOptions.DryRun = dryRun
		return ev.DeleteOptions, nil
	}
	if len(dryRun) == 0 {
		return ev.DeleteOptions, nil
	}
	if !reflect.DeepEqual(dryRun, ev.DeleteOptions.DryRun) {
		return nil, fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", dryRun, ev.DeleteOptions.DryRun)
	}
	return ev.DeleteOptions, nil
}

func canIgnorePDB(pod *api.Pod) bool {
	return pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed ||
		pod.Status.Phase == api.PodPending || !pod.DeletionTimestamp.IsZero()
}

func shouldEnforceResourceVersion(pod *api.Pod) bool {
	return pod.Status.Phase != api.PodSucceeded && pod.Status.Phase != api.PodFailed && pod.DeletionTimestamp.IsZero()
}

func resourceVersionIsUnset(o *metav1.DeleteOptions) bool {
	return o.Preconditions == nil || o.Preconditions.ResourceVersion == nil
}

func setPreconditionsResourceVersion(o *metav1.DeleteOptions, rv string) {
	if o.Preconditions == nil {
		o.Preconditions = &metav1.Preconditions{}
	}
	o.Preconditions.ResourceVersion = &rv
}

func createTooManyRequestsError(name string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name)})
	return err
}

// readPod reads the pod as kube's internal type, with its resourceVersion.
func (c *call) readPod(ctx context.Context, name string) (*api.Pod, error) {
	if err := c.keyError(name); err != nil {
		return nil, asKubeError(err)
	}
	kv, err := c.s.store.Get(ctx, c.res.key(c.ns, name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(api.Resource("pods"), name)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	d, err := decodeDoc(kv.Value)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	o, err := c.res.typed().decodeStored(d)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	pod := o.(*api.Pod)
	pod.ResourceVersion = strconv.FormatInt(kv.Revision, 10)
	return pod, nil
}

// addConditionAndDeletePod is kube's: unless a dry run, the pod gets the
// DisruptionTarget condition (the DeleteOptions' uid and resourceVersion
// preconditions checked first, kube's 409 on "Pod"), and then is deleted
// with the DeleteOptions (its resourceVersion precondition moved to the
// condition's write).
func (c *call) addConditionAndDeletePod(ctx context.Context, name string, opts *metav1.DeleteOptions) error {
	if !dryrun.IsDryRun(opts.DryRun) {
		pc := *c
		pc.name = name
		t := c.res.typed()
		stored, err := c.s.guaranteedUpdateNoRequest(ctx, &pc, func(cur *doc, rev int64) (*doc, error) {
			o, err := t.decodeStored(cur)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			pod := o.(*api.Pod)
			if p := opts.Preconditions; p != nil {
				if uid := p.UID; uid != nil && len(*uid) > 0 && *uid != pod.UID {
					return nil, apierrors.NewConflict(schema.GroupResource{Resource: "Pod"}, name, fmt.Errorf(
						"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *uid, pod.UID))
				}
				if rv := p.ResourceVersion; rv != nil && len(*rv) > 0 && *rv != strconv.FormatInt(rev, 10) {
					return nil, apierrors.NewConflict(schema.GroupResource{Resource: "Pod"}, name, fmt.Errorf(
						"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%d). The object might have been modified", *rv, rev))
				}
			}
			podutil.UpdatePodCondition(&pod.Status, &api.PodCondition{
				Type: api.DisruptionTarget, Status: api.ConditionTrue,
				Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting",
			})
			next := &doc{apiVersion: cur.apiVersion, kind: cur.kind}
			if err := t.encodeInto(pod, next); err != nil {
				return nil, err
			}
			delete(next.meta, "resourceVersion")
			return next, nil
		})
		if err != nil {
			return asKubeError(err)
		}
		if !resourceVersionIsUnset(opts) {
			d, err := decodeDoc(stored)
			if err != nil {
				return apierrors.NewInternalError(err)
			}
			opts = opts.DeepCopy()
			rv := d.metaString("resourceVersion")
			opts.Preconditions.ResourceVersion = &rv
		}
	}
	var o deleteRequest
	b, err := json.Marshal(opts)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return apierrors.NewInternalError(err)
	}
	pc := *c
	_, err = pc.deleteObject(ctx, name, o, dryrun.IsDryRun(opts.DryRun))
	return asKubeError(err)
}

// pdbPrefix is where the namespace's budgets are stored.
func pdbPrefix(ns string) string { return "/registry/poddisruptionbudgets/" + ns + "/" }

func decodePDB(kv storage.KV) (*policyv1.PodDisruptionBudget, error) {
	pdb := &policyv1.PodDisruptionBudget{}
	if err := json.Unmarshal(kv.Value, pdb); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	pdb.ResourceVersion = strconv.FormatInt(kv.Revision, 10)
	return pdb, nil
}

// podDisruptionBudgets are the budgets of the pod's namespace whose
// selector matches it (an invalid selector matches nothing).
func (c *call) podDisruptionBudgets(ctx context.Context, pod *api.Pod) ([]policyv1.PodDisruptionBudget, error) {
	kvs, err := c.s.listAll(ctx, pdbPrefix(pod.Namespace))
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var out []policyv1.PodDisruptionBudget
	for _, kv := range kvs {
		pdb, err := decodePDB(kv)
		if err != nil {
			return nil, err
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, *pdb)
	}
	return out, nil
}

func (c *call) readPDB(ctx context.Context, ns, name string) (*policyv1.PodDisruptionBudget, error) {
	kv, err := c.s.store.Get(ctx, pdbPrefix(ns)+name)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(policyv1.Resource("poddisruptionbudgets"), name)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return decodePDB(kv)
}

// checkAndDecrement is kube's: the budget must be current and allow a
// disruption; it then allows one less and, unless a dry run, records the
// pod as disrupted, written at the revision read (a conflict is retried
// by the caller with the budget read again).
func (c *call) checkAndDecrement(ctx context.Context, podName string, pdb policyv1.PodDisruptionBudget, dryRun bool) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return createTooManyRequestsError(pdb.Name)
	}
	forbidden := func(reason, msg string) error {
		err := apierrors.NewForbidden(policy.Resource("poddisruptionbudget"), pdb.Name, errors.New(reason))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: policyv1.DisruptionBudgetCause, Message: msg})
		return err
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return forbidden("pdb disruptions allowed is negative",
			fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: pdb disruptions allowed is negative", pdb.Name))
	}
	if len(pdb.Status.DisruptedPods) > podstorage.MaxDisruptedPodSize {
		return forbidden("DisruptedPods map too big - too many evictions not confirmed by PDB controller",
			fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: too many pending evictions not confirmed by PDB controller", pdb.Name))
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		cond := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
		var msg string
		switch {
		case cond != nil && cond.Status == metav1.ConditionFalse && len(cond.Message) > 0 && cond.Reason == policyv1.SyncFailedReason:
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, cond.Message)
		case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
			msg = fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
		case cond != nil && cond.Status == metav1.ConditionFalse && len(cond.Message) > 0:
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, cond.Reason, cond.Message)
		default:
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
		}
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: msg})
		return err
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		pdbhelper.UpdateDisruptionAllowedCondition(&pdb)
	}
	if dryRun {
		return nil
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[podName] = metav1.Time{Time: c.s.now().Truncate(time.Second)}
	rev, err := strconv.ParseInt(pdb.ResourceVersion, 10, 64)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	pdb.ResourceVersion = ""
	b, err := json.Marshal(&pdb)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	d, err := decodeDoc(b)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	_, err = c.s.store.Update(ctx, pdbPrefix(pdb.Namespace)+pdb.Name, d.encode(), rev)
	switch {
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(policyv1.Resource("poddisruptionbudgets"), pdb.Name, errors.New(wire.ConflictModified))
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(policyv1.Resource("poddisruptionbudgets"), pdb.Name)
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	return nil
}
