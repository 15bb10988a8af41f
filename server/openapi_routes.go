package server

import (
	"context"
	"fmt"
	aggregatorinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	"maps"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install" // the Scale of the scale subresources, as kube-apiserver registers it
	"k8s.io/kubernetes/pkg/registry/core/componentstatus"
	podstorage "k8s.io/kubernetes/pkg/registry/core/pod/storage"
)

// The paths of the OpenAPI documents are kube-apiserver's own: its
// endpoint installer (k8s.io/apiserver/pkg/endpoints) turns REST storages
// into go-restful routes, and kube-openapi's builders turn those routes
// into documents. listwatch serves resources with its own handlers, so it
// hands the installer a stand-in storage per served resource (and
// subresource) that has the methods, and so the verbs, of the one kube
// registers, and the Go types kube's storage returns; or, where kube's
// REST object describes itself without a store (the connect
// subresources, pods/log, pods/eviction…: openAPISubresources), that
// object. The routes are only ever read by the OpenAPI builders, never
// served.

// apiextensionsOpenAPIScheme is the scheme the apiextensions-apiserver
// installs its group with: the group, and the options in the empty v1.
var apiextensionsOpenAPIScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return s
}()

// aggregatorOpenAPIScheme is the same for apiregistration.k8s.io, which
// kube-apiserver serves from its aggregator.
var aggregatorOpenAPIScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	aggregatorinstall.Install(s)
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return s
}()

var (
	legacyOpenAPICodecs        = legacyscheme.Codecs
	apiextensionsOpenAPICodecs = serializer.NewCodecFactory(apiextensionsOpenAPIScheme)
	aggregatorOpenAPICodecs    = serializer.NewCodecFactory(aggregatorOpenAPIScheme)
)

// openAPISchemeFor is the scheme kube-apiserver registers group in.
func openAPISchemeFor(group string) (*runtime.Scheme, runtime.NegotiatedSerializer) {
	switch group {
	case groupCRD:
		return apiextensionsOpenAPIScheme, apiextensionsOpenAPICodecs
	case groupAPIRegistration:
		return aggregatorOpenAPIScheme, aggregatorOpenAPICodecs
	}
	return legacyscheme.Scheme, legacyOpenAPICodecs
}

// openAPIStub is a stand-in REST storage: it names the types, and its
// methods (never called) tell the installer which verbs are served.
type openAPIStub struct {
	newObj, newList func() runtime.Object
	namespaced      bool
	singular        string
	gvk             *schema.GroupVersionKind // GroupVersionKindProvider (Scale)
	// returnsDeleted: DELETE answers the deleted object, not a Status.
	returnsDeleted bool
}

// DeleteReturnsDeletedObject is rest.MayReturnFullObjectDeleter.
func (s *openAPIStub) DeleteReturnsDeletedObject() bool { return s.returnsDeleted }

var errOpenAPIStub = fmt.Errorf("server: OpenAPI route stubs are not served")

func (s *openAPIStub) New() runtime.Object     { return s.newObj() }
func (s *openAPIStub) Destroy()                {}
func (s *openAPIStub) NamespaceScoped() bool   { return s.namespaced }
func (s *openAPIStub) GetSingularName() string { return s.singular }
func (s *openAPIStub) NewList() runtime.Object { return s.newList() }
func (s *openAPIStub) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errOpenAPIStub
}

type (
	stubCreate struct{ *openAPIStub }
	stubGet    struct{ *openAPIStub }
	stubList   struct{ *openAPIStub }
	stubUpdate struct{ *openAPIStub }
	stubDelete struct{ *openAPIStub }
	stubDelAll struct{ *openAPIStub }
	stubWatch  struct{ *openAPIStub }
)

func (stubCreate) Create(context.Context, runtime.Object, rest.ValidateObjectFunc, *metav1.CreateOptions) (runtime.Object, error) {
	return nil, errOpenAPIStub
}
func (stubGet) Get(context.Context, string, *metav1.GetOptions) (runtime.Object, error) {
	return nil, errOpenAPIStub
}
func (stubList) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	return nil, errOpenAPIStub
}
func (stubUpdate) Update(context.Context, string, rest.UpdatedObjectInfo, rest.ValidateObjectFunc, rest.ValidateObjectUpdateFunc, bool, *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return nil, false, errOpenAPIStub
}
func (stubDelete) Delete(context.Context, string, rest.ValidateObjectFunc, *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return nil, false, errOpenAPIStub
}
func (stubDelAll) DeleteCollection(context.Context, rest.ValidateObjectFunc, *metav1.DeleteOptions, *metainternalversion.ListOptions) (runtime.Object, error) {
	return nil, errOpenAPIStub
}
func (stubWatch) Watch(context.Context, *metainternalversion.ListOptions) (watch.Interface, error) {
	return nil, errOpenAPIStub
}

// The storages kube registers, by the verbs they serve.
type (
	// standardStorage: every verb (kube's registry Store).
	standardStorage struct {
		stubCreate
		stubGet
		stubList
		stubUpdate
		stubDelete
		stubDelAll
		stubWatch
		*openAPIStub
	}
	// namespaceStorage: every verb but deletecollection (kube's namespace REST).
	namespaceStorage struct {
		stubCreate
		stubGet
		stubList
		stubUpdate
		stubDelete
		stubWatch
		*openAPIStub
	}
	// createStorage: create only (the review APIs).
	createStorage struct {
		stubCreate
		*openAPIStub
	}
	// getUpdateStorage: get, update and patch (status, and the
	// subresources with strategies of their own: pods/ephemeralcontainers,
	// pods/resize, certificatesigningrequests/approval).
	getUpdateStorage struct {
		stubGet
		stubUpdate
		*openAPIStub
	}
	// updateStorage: update only (namespaces/finalize).
	updateStorage struct {
		stubUpdate
		*openAPIStub
	}
	// scaleStorage: a scale subresource, whose kind is autoscaling/v1
	// Scale in every group.
	scaleStorage struct {
		stubGet
		stubUpdate
		*openAPIStub
	}
)

func (s scaleStorage) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind { return *s.gvk }

// openAPIStorages returns the stand-in storages of the built-in resources
// of one group-version, keyed as kube's installer keys them ("pods",
// "pods/status").
func openAPIStorages(rs []*resource) (map[string]rest.Storage, error) {
	out := map[string]rest.Storage{}
	for _, r := range rs {
		t := r.typed()
		if r.virtual {
			t = reviewTyping(r)
		}
		if t == nil {
			return nil, fmt.Errorf("server: no typing for %s", r.gr())
		}
		scheme, internal := t.scheme, t.internal
		newObj := func() runtime.Object {
			o, err := scheme.New(internal)
			if err != nil {
				panic(err) // the kinds table names registered kinds only
			}
			return o
		}
		listKind := internal
		listKind.Kind += "List"
		newList := func() runtime.Object {
			o, err := scheme.New(listKind)
			if err != nil {
				panic(err)
			}
			return o
		}
		stub := &openAPIStub{newObj: newObj, newList: newList, namespaced: r.namespaced, singular: r.singular,
			returnsDeleted: returnsDeleted[r.group+"/"+r.plural] && r.group+"/"+r.plural != "/namespaces"} // kube's namespace REST wraps its store and does not say so
		switch {
		case r.group == "" && r.plural == "componentstatuses":
			// kube's read-only REST, which needs no servers to probe to
			// describe itself.
			out[r.plural] = componentstatus.NewStorage(nil)
			continue
		case r.virtual:
			out[r.plural] = createStorage{stubCreate{stub}, stub}
			continue
		case r.group == "" && r.plural == "namespaces":
			out[r.plural] = namespaceStorage{stubCreate{stub}, stubGet{stub}, stubList{stub}, stubUpdate{stub}, stubDelete{stub}, stubWatch{stub}, stub}
			out["namespaces/finalize"] = updateStorage{stubUpdate{stub}, stub}
		default:
			out[r.plural] = standardStorage{stubCreate{stub}, stubGet{stub}, stubList{stub}, stubUpdate{stub}, stubDelete{stub}, stubDelAll{stub}, stubWatch{stub}, stub}
		}
		if r.hasStatus {
			out[r.plural+"/status"] = getUpdateStorage{stubGet{stub}, stubUpdate{stub}, stub}
		}
		for _, sub := range r.subresources {
			out[r.plural+"/"+sub] = getUpdateStorage{stubGet{stub}, stubUpdate{stub}, stub}
		}
		if r.scale != nil {
			gvk := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
			sc := &openAPIStub{newObj: func() runtime.Object { return &autoscaling.Scale{} }, namespaced: r.namespaced, singular: r.singular, gvk: &gvk}
			out[r.plural+"/scale"] = scaleStorage{stubGet{sc}, stubUpdate{sc}, sc}
		}
	}
	return out, nil
}

// openAPISubresources are, by group-version path, the subresources whose
// routes kube's REST objects describe rather than stand-ins: the connect
// subresources with their options types and methods (proxies taking a
// {path}), pods/log a GET of text/plain with PodLogOptions, and the
// create-only subresources with their kinds (policy/v1 Eviction,
// authentication/v1 TokenRequest). Those served by kube's objects
// (podsub.go, satoken.go) describe themselves; for those served by
// listwatch's handlers (bindings.go, eviction.go) zero values do, as
// describing needs no store. serviceaccounts/token is listed only when
// served, as in discovery.
func (s *Server) openAPISubresources() map[string]map[string]rest.Storage {
	core := map[string]rest.Storage{
		"pods/log":         s.connect.log,
		"pods/exec":        s.connect.exec,
		"pods/attach":      s.connect.attach,
		"pods/portforward": s.connect.portForward,
		"pods/proxy":       s.connect.podProxy,
		"services/proxy":   s.connect.serviceProxy,
		"nodes/proxy":      s.connect.nodeProxy,
		"pods/binding":     &podstorage.BindingREST{},
		"pods/eviction":    &podstorage.EvictionREST{},
	}
	if s.tokens != nil {
		core["serviceaccounts/token"] = s.tokens
	}
	return map[string]map[string]rest.Storage{gvPath("", "v1"): core}
}

// reviewTyping is the typing of a review resource (identity.go).
func reviewTyping(r *resource) *typedKind {
	return &typedKind{
		scheme:   legacyscheme.Scheme,
		external: schema.GroupVersionKind{Group: r.group, Version: r.version, Kind: r.kind},
		internal: schema.GroupVersionKind{Group: r.group, Version: runtime.APIVersionInternal, Kind: r.kind},
	}
}

// openAPIWebService installs the built-in resources rs of one
// group-version as kube-apiserver does, with the subresources subs that
// kube's own REST objects describe, and returns the go-restful web
// service holding their routes ("/api/v1" or "/apis/g/v").
func openAPIWebService(group, version string, rs []*resource, subs map[string]rest.Storage) (*restful.WebService, error) {
	storages, err := openAPIStorages(rs)
	if err != nil {
		return nil, err
	}
	maps.Copy(storages, subs)
	scheme, codecs := openAPISchemeFor(group)
	root := "/apis"
	if group == "" {
		root = "/api"
	}
	gv := &endpoints.APIGroupVersion{
		Storage:                     storages,
		Root:                        root,
		GroupVersion:                schema.GroupVersion{Group: group, Version: version},
		OptionsExternalVersion:      &schema.GroupVersion{Version: "v1"},
		Serializer:                  codecs,
		ParameterCodec:              runtime.NewParameterCodec(scheme),
		Typer:                       scheme,
		Creater:                     scheme,
		Convertor:                   scheme,
		ConvertabilityChecker:       scheme,
		Defaulter:                   scheme,
		UnsafeConvertor:             runtime.UnsafeObjectConvertor(scheme),
		Namer:                       runtime.Namer(meta.NewAccessor()),
		TypeConverter:               managedfields.NewDeducedTypeConverter(),
		EquivalentResourceRegistry:  runtime.NewEquivalentResourceRegistry(),
		AllServedVersionsByResource: map[string][]string{},
	}
	c := restful.NewContainer()
	if _, _, err := gv.InstallREST(c); err != nil {
		return nil, err
	}
	want := strings.TrimSuffix(root+"/"+strings.TrimPrefix(group+"/"+version, "/"), "/")
	for _, ws := range c.RegisteredWebServices() {
		if ws.RootPath() == want {
			return ws, nil
		}
	}
	return nil, fmt.Errorf("server: no web service at %s", want)
}
