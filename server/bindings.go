package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apistorage "k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	kubefeatures "k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/probe"
	"k8s.io/kubernetes/pkg/registry/core/componentstatus"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// Core v1's resources that are not stored objects: bindings (and the
// pods/binding subresource), which assign a pod to a node as kube's
// BindingREST does, and componentstatuses, kube's read-only health list.

// coreSpecialResources are bindings and componentstatuses as kube-apiserver
// v1.37.2 describes them in discovery.
func coreSpecialResources() []*resource {
	bindings := &resource{version: "v1", plural: "bindings", singular: "binding", kind: "Binding", namespaced: true,
		virtual: true, handler: (*call).bindCollection}
	cs := &resource{version: "v1", plural: "componentstatuses", singular: "componentstatus", kind: "ComponentStatus",
		shortNames: []string{"cs"}, virtual: true, verbList: []string{"get", "list"},
		deprecated: "v1 ComponentStatus is deprecated in v1.19+", handler: (*call).componentStatuses}
	return []*resource{bindings, cs}
}

var bindingKind = &typedKind{
	scheme:   legacyscheme.Scheme,
	external: schema.GroupVersionKind{Version: "v1", Kind: "Binding"},
	internal: schema.GroupVersionKind{Version: runtime.APIVersionInternal, Kind: "Binding"},
}

// bindCollection answers a request on /api/v1/namespaces/{ns}/bindings:
// POST binds the pod the Binding names; nothing else is routed.
func (c *call) bindCollection(info *request.Info) error {
	if info.Name != "" || info.Subresource != "" || info.Namespace == "" && !info.UnderNamespace {
		return notFoundPath()
	}
	if info.Verb != "create" {
		return methodNotAllowed()
	}
	return c.bind("")
}

// podBinding answers POST pods/{name}/binding.
func (c *call) podBinding() error {
	bindings, _ := c.s.reg.lookup("", "v1", "bindings")
	bc := *c
	bc.res = bindings
	return bc.bind(c.name)
}

// bind decodes the request's Binding and assigns its pod (urlName, on
// pods/binding, must be its name) to the target node, as kube: the pod
// must exist, not be deleting, have no node and no scheduling gates; the
// Binding's uid and resourceVersion are preconditions; its annotations
// (and, with PodTopologyLabelsAdmission, labels) are merged into the
// pod's; PodScheduled becomes True. The answer is kube's 201 Success.
func (c *call) bind(urlName string) error {
	if err := c.checkWriteOptions("CreateOptions"); err != nil {
		return err
	}
	d, err := c.decodeBody()
	if err != nil {
		return err
	}
	obj, err := c.decodeTyped(bindingKind, d)
	if err != nil {
		return err
	}
	binding := obj.(*api.Binding)
	// A doc's encoding leaves resourceVersion out (storage owns it); the
	// Binding's is a precondition, so it is taken from the body itself.
	binding.ResourceVersion = d.metaString("resourceVersion")
	if urlName != "" && urlName != binding.Name {
		return wire.NewBadRequest("name in URL does not match name in Binding object")
	}
	if errs := validation.ValidatePodBinding(binding); len(errs) != 0 {
		// kube returns the aggregate as is: a 500 with no reason.
		return kubeStatus(&apierrors.StatusError{ErrStatus: *responsewriters.ErrorToAPIStatus(errs.ToAggregate())})
	}
	if err := keyError(true, c.ns, binding.Name); err != nil {
		return err
	}
	pods, _ := c.s.reg.lookup("", "v1", "pods")
	pc := &call{s: c.s, w: c.w, r: c.r, res: pods, ns: c.ns, name: binding.Name, tr: c.tr, warn: c.warn}
	if err := c.assignPod(pc, binding); err != nil {
		return err
	}
	return c.writeStatus(http.StatusCreated, &wire.Status{TypeMeta: wire.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: "Success", Code: http.StatusCreated})
}

func (c *call) assignPod(pc *call, b *api.Binding) error {
	t := pc.res.typed()
	podGR := schema.GroupResource{Resource: "pods"}
	conflict := func(err error) error {
		return kubeStatus(apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, b.Name, err))
	}
	update := func(cur *doc, rev int64) (*doc, error) {
		o, err := t.decodeStored(cur)
		if err != nil {
			return nil, wire.NewInternalError(err)
		}
		pod := o.(*api.Pod)
		// kube checks both as storage preconditions: a failure is etcd3's
		// invalid-object StorageError, answered as a Conflict on pods.
		precondition := func(msg string) error {
			return kubeStatus(apierrors.NewConflict(podGR, b.Name, apistorage.NewInvalidObjError(pc.res.key(pc.ns, pc.name), msg)))
		}
		if b.UID != "" && b.UID != pod.UID {
			return nil, precondition(fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, pod.UID))
		}
		if b.ResourceVersion != "" && b.ResourceVersion != strconv.FormatInt(rev, 10) {
			return nil, precondition(fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", b.ResourceVersion, rev))
		}
		switch {
		case pod.DeletionTimestamp != nil:
			return nil, conflict(fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		case pod.Spec.NodeName != "":
			return nil, conflict(fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		case len(pod.Spec.SchedulingGates) != 0:
			return nil, conflict(fmt.Errorf("pod %v has non-empty .spec.schedulingGates", pod.Name))
		}
		pod.Spec.NodeName = b.Target.Name
		if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.ClearingNominatedNodeNameAfterBinding) {
			pod.Status.NominatedNodeName = ""
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		for k, v := range b.Annotations {
			pod.Annotations[k] = v
		}
		podutil.DropInitContainerAnnotations(pod.Annotations)
		if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.PodTopologyLabelsAdmission) && len(b.Labels) > 0 {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			for k, v := range b.Labels {
				pod.Labels[k] = v
			}
		}
		podutil.UpdatePodCondition(&pod.Status, &api.PodCondition{Type: api.PodScheduled, Status: api.ConditionTrue})
		next := &doc{apiVersion: cur.apiVersion, kind: cur.kind}
		if err := t.encodeInto(pod, next); err != nil {
			return nil, err
		}
		delete(next.meta, "resourceVersion")
		return next, nil
	}
	if isDryRun(c.r) {
		kv, err := c.s.store.Get(c.r.Context(), pc.res.key(pc.ns, pc.name))
		if err != nil {
			return storageError(err, pc.res, b.Name)
		}
		cur, err := decodeDoc(kv.Value)
		if err != nil {
			return wire.NewInternalError(err)
		}
		_, err = update(cur, kv.Revision)
		return err
	}
	_, err := c.s.guaranteedUpdateNoRequest(c.r.Context(), pc, update)
	return err
}

// componentStatuses answers get and list of componentstatuses with kube's
// own REST: controller-manager and scheduler probed where kube probes them
// (https://127.0.0.1:10257 and :10259, /healthz), and etcd-0, this
// server's storage, healthy when a linearizable read succeeds.
func (c *call) componentStatuses(info *request.Info) error {
	if info.Subresource != "" || info.Namespace != "" {
		return notFoundPath()
	}
	servers := func() map[string]componentstatus.Server {
		return map[string]componentstatus.Server{
			"controller-manager": &componentstatus.HttpServer{EnableHTTPS: true, TLSConfig: &tls.Config{InsecureSkipVerify: true}, Addr: "127.0.0.1", Port: 10257, Path: "/healthz"},
			"scheduler":          &componentstatus.HttpServer{EnableHTTPS: true, TLSConfig: &tls.Config{InsecureSkipVerify: true}, Addr: "127.0.0.1", Port: 10259, Path: "/healthz"},
			"etcd-0":             storeHealth{c.r.Context(), c},
		}
	}
	rest := componentstatus.NewStorage(servers)
	var out runtime.Object
	var err error
	switch {
	case info.Verb == "get" && info.Name != "":
		out, err = rest.Get(c.r.Context(), info.Name, &metav1.GetOptions{})
	case info.Verb == "list" && info.Name == "":
		opts := &metainternalversion.ListOptions{}
		q := c.r.URL.Query()
		if s := q.Get("labelSelector"); s != "" {
			if opts.LabelSelector, err = labels.Parse(s); err != nil {
				return wire.NewBadRequest(err.Error())
			}
		}
		if s := q.Get("fieldSelector"); s != "" {
			if opts.FieldSelector, err = fields.ParseSelector(s); err != nil {
				return wire.NewBadRequest(err.Error())
			}
		}
		out, err = rest.List(c.r.Context(), opts)
	case info.Verb == "watch":
		// kube's list handler, as componentstatuses cannot be watched.
		return wire.NewMethodNotSupported(c.res.gr(), "watch")
	default:
		return methodNotAllowed()
	}
	if err != nil {
		return kubeStatus(err)
	}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ComponentStatus"}
	if _, ok := out.(*api.ComponentStatusList); ok {
		gvk.Kind = "ComponentStatusList"
	}
	external, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		return wire.NewInternalError(err)
	}
	if err := legacyscheme.Scheme.Convert(out, external, nil); err != nil {
		return wire.NewInternalError(err)
	}
	external.GetObjectKind().SetGroupVersionKind(gvk)
	b, err := json.Marshal(external)
	if err != nil {
		return wire.NewInternalError(err)
	}
	if gvk.Kind == "ComponentStatus" {
		return c.writeObject(http.StatusOK, b)
	}
	if o, err := c.output(); err == nil && o.form == formTable {
		list := external.(*corev1.ComponentStatusList)
		values := make([][]byte, 0, len(list.Items))
		for i := range list.Items {
			item := &list.Items[i]
			item.APIVersion, item.Kind = "v1", "ComponentStatus"
			v, err := json.Marshal(item)
			if err != nil {
				return wire.NewInternalError(err)
			}
			values = append(values, v)
		}
		opts, err := c.tableOptions(o)
		if err != nil {
			return err
		}
		t, err := c.listTable(opts, values, wire.ListMeta{})
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, t)
		return nil
	}
	writeRaw(c.w, http.StatusOK, b)
	return nil
}

// storeHealth is etcd-0's check: a linearizable read of the store.
type storeHealth struct {
	ctx context.Context
	c   *call
}

func (h storeHealth) DoServerCheck() (probe.Result, string, error) {
	if _, err := h.c.s.store.CurrentRevision(h.ctx); err != nil {
		return probe.Failure, "", err
	}
	return probe.Success, "ok", nil
}
