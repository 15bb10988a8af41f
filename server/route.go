package server

import (
	"encoding/json"
	"errors"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/admission"

	"github.com/listwatch/listwatch/server/filters"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/trace"
	"github.com/listwatch/listwatch/wire"
)

// serveHTTP routes one request: health and version, discovery, OpenAPI,
// then resource requests by verb. Handler wraps it in
// filters.Recovery, the one recovery path: a panic becomes a 500
// Status, or, once the response has begun, a cut connection.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "//") {
		// kube's router matches its paths as sent, and none begins with
		// "//", though its request info (and so authorization) reads
		// //api/v1/namespaces as /api/v1/namespaces, as Parse does.
		writeNoRoute(w, r)
		return
	}
	if s.serveNonResource(w, r) {
		return
	}
	info, ok := request.InfoFrom(r.Context())
	if !ok {
		var err error
		if info, err = request.Parse(r); err != nil {
			writeError(w, wire.NewInternalError(err))
			return
		}
	}
	if !info.IsResourceRequest {
		writeNoRoute(w, r)
		return
	}
	s.serveResource(w, r, info)
}

// WriteNoRoute answers a path no route serves, for request.WithScope.
func (s *Server) WriteNoRoute(w http.ResponseWriter, r *http.Request) { writeNoRoute(w, r) }

// Scope tells the scope of a served resource now, for request.WithScope.
func (s *Server) Scope(group, version, resource string) request.Scope {
	res, ok := s.reg.lookup(group, version, resource)
	if !ok {
		return request.ScopeUnknown
	}
	return res.scope()
}

func (r *resource) scope() request.Scope {
	if r.namespaced {
		return request.ScopeNamespaced
	}
	return request.ScopeCluster
}

// errNoRoute is target's answer for a resource nothing serves (or not in
// that scope): writeNoRoute's 404.
var errNoRoute = errors.New("no route")

// target resolves the resource, namespace and name a resource request acts
// on, or the router's error for it. The namespace acted on is always
// info.Namespace for a namespaced resource and "" for a cluster-scoped one;
// a cluster-scoped resource under a namespace has no route (as
// request.WithScope decides before authorization, checked again here as the
// registry may have changed since), and a namespaced one without a
// namespace is only listed and watched, across all namespaces.
func (s *Server) target(info *request.Info, method string) (res *resource, ns string, status bool, err error) {
	res, ns, status, err = s.route(info)
	if r, ok := s.reg.lookup(info.APIGroup, info.APIVersion, info.Resource); !ok || r.crd != "" || isConnect(r, info) {
		// A custom resource is served by kube's CRD handler, not its
		// router, which takes any method (HEAD as GET); a connect
		// subresource checks its own methods (podsub.go).
		return res, ns, status, err
	}
	if err == nil && (method == http.MethodHead || info.WatchPath && method != http.MethodGet) {
		// kube's installer registers no HEAD route, and a /watch/ path
		// for GET only.
		return nil, "", false, methodNotAllowed()
	}
	if isNoRoute(err) && method != http.MethodGet && !info.WatchPath {
		// The path may be routed for GET (a subresource's GET, PUT and
		// PATCH; a list): another method there is the router's 405.
		get := *info
		get.Verb = "get"
		if get.Name == "" {
			get.Verb = "list"
		}
		if _, _, _, err := s.route(&get); err == nil {
			return nil, "", false, methodNotAllowed()
		}
	}
	return res, ns, status, err
}

// isNoRoute reports whether err is route's answer for a path no route
// serves, whatever the method.
func isNoRoute(err error) bool {
	var st *wire.Status
	return err == errNoRoute || errors.As(err, &st) && st.Code == http.StatusNotFound && st.Message == notFoundPath().Message
}

// route is target for a request whose method is the one its verb tells:
// the resource, namespace and name, a 404 for a path no route serves, or
// a 405 for a verb the path does not take.
func (s *Server) route(info *request.Info) (res *resource, ns string, status bool, err error) {
	if sub, ok := unnamedNamespaceSub(info); ok {
		// kube's routes of a namespace's status and finalize take an
		// empty name, which its handlers refuse.
		if sub == "status" && (info.Verb == "list" || info.Verb == "update" || info.Verb == "patch") ||
			sub == "finalize" && info.Verb == "update" {
			return nil, "", false, wire.NewBadRequest("name must be provided")
		}
		return nil, "", false, methodNotAllowed()
	}
	res, ok := s.reg.lookup(info.APIGroup, info.APIVersion, info.Resource)
	if !ok || !info.Routable(res.scope()) || info.EmptySegment {
		return nil, "", false, errNoRoute
	}
	if res.crd != "" {
		return customRoute(res, info)
	}
	if !res.namespaced && info.UnderNamespace {
		// kube's installer routes no cluster-scoped kind under
		// /namespaces/{namespace}/, an empty namespace's either
		// (Routable lets that through, as kube's CRD handler serves a
		// cluster-scoped custom resource there).
		return nil, "", false, errNoRoute
	}
	// all: a namespaced kind across namespaces (/api/v1/configmaps). A
	// path with an empty namespace (/api/v1/namespaces//configmaps) is
	// routed as any namespace's, kube's handlers then acting on
	// namespace "": a list or watch across namespaces, and the store's
	// 400 where it needs the namespace for a key (keyError).
	all := res.namespaced && info.Namespace == "" && !info.UnderNamespace
	if res.handler != nil {
		if res.namespaced {
			ns = info.Namespace
		}
		if all || info.WatchPath {
			return nil, "", false, notFoundPath()
		}
		if err := handlerMethod(res, info); err != nil {
			return nil, "", false, err
		}
		return res, ns, false, nil // the handler routes (bindings.go)
	}
	if res.virtual {
		// Create-only: kube routes no path below the collection.
		if info.Name != "" || info.Subresource != "" {
			return nil, "", false, notFoundPath()
		}
		if res.namespaced {
			ns = info.Namespace
		}
		if all || info.WatchPath {
			return nil, "", false, notFoundPath()
		}
		if info.Verb != "create" {
			// kube routes the collection for POST only: its router
			// answers another method before looking at the body's
			// type or Accept.
			return nil, "", false, methodNotAllowed()
		}
		return res, ns, false, nil
	}
	if sub, ok := connectSubOf(res, info); ok {
		// podsub.go: kube's routes for these take no path after the
		// subresource, but for the proxies.
		if res.namespaced {
			ns = info.Namespace
		}
		if all || (!sub.subpath && len(subresourceParts(info.Path, info)) > 0) {
			return nil, "", false, notFoundPath()
		}
		return res, ns, false, nil
	}
	if isTokenRequest(res, info) {
		if info.Verb != "create" {
			return nil, "", false, methodNotAllowed()
		}
		return res, info.Namespace, false, nil
	}
	status = info.Subresource == "status" && res.hasStatus &&
		(info.Verb == "get" || info.Verb == "update" || info.Verb == "patch")
	if err := customSubresource(res, info); err != nil {
		return nil, "", false, err
	}
	if info.Subresource == "finalize" && res.isNamespaces() && info.Name != "" {
		if info.Verb != "update" {
			return nil, "", false, methodNotAllowed()
		}
	} else if info.Subresource != "" && !status && !servesScale(res, info) && servesSub(res, info) == "" &&
		(res.subCreate[info.Subresource] == nil || info.Name == "") {
		return nil, "", false, notFoundPath()
	}
	if res.namespaced {
		ns = info.Namespace
	}
	if all && info.WatchPath && info.Name != "" {
		// kube watches a namespaced kind across namespaces as a
		// collection only: no name follows /watch/{resource}.
		return nil, "", false, notFoundPath()
	}
	if all && info.Verb != "list" && info.Verb != "watch" {
		if info.Name == "" && info.Subresource == "" {
			// kube's installer routes a namespaced kind's list across
			// namespaces for GET only: another method there is its
			// router's 405, not a missing path.
			return nil, "", false, methodNotAllowed()
		}
		return nil, "", false, notFoundPath()
	}
	if res.subCreate[info.Subresource] != nil && info.Name != "" {
		if info.Verb != "create" {
			return nil, "", false, methodNotAllowed()
		}
		return res, ns, false, nil // pods/binding (bindings.go)
	}
	switch {
	case info.Verb == "":
		// A method no verb has (OPTIONS, say).
		return nil, "", false, methodNotAllowed()
	case info.Verb == "create" && info.Name != "",
		(info.Verb == "update" || info.Verb == "patch") && info.Name == "":
		return nil, "", false, methodNotAllowed()
	}
	return res, ns, status, nil
}

// unnamedNamespaceSub tells whether info's path is
// /api/v1/namespaces//status or /api/v1/namespaces//finalize (a
// namespace's subresource with an empty name), and which.
func unnamedNamespaceSub(info *request.Info) (string, bool) {
	if !info.EmptySegment || info.APIPrefix != "api" || info.WatchPath || info.Resource != "namespaces" || info.Name != "" {
		return "", false
	}
	switch info.Subresource {
	case "status", "finalize":
		return info.Subresource, strings.Trim(info.Path, "/") == "api/v1/namespaces//"+info.Subresource
	}
	return "", false
}

// customRoute is route for a custom resource, which kube serves by its
// CRD handler, not by its router, so any method reaches it and is read as
// the verb kube's request info gives it. A namespaced resource without a
// namespace is listed and watched only: another verb goes on to the 404
// of a path nothing serves. A declared status or scale subresource takes
// get, update and patch (customSubresource). The object and the
// collection take every verb: a POST on the object is a create (of the
// body's object: kube's create ignores the path's name), a PUT or PATCH
// of the collection gets to its handler's 400 for the missing name
// (unnamedWrite), and a method that is no verb (OPTIONS, TRACE…) is the
// CRD handler's 405 naming the resource.
func customRoute(res *resource, info *request.Info) (_ *resource, ns string, status bool, err error) {
	if res.namespaced {
		ns = info.Namespace
		if ns == "" && info.Verb != "list" && info.Verb != "watch" {
			return nil, "", false, errNoRoute
		}
	}
	if res.conv != nil && res.conv.unresolved {
		// kube's crdHandler when getOrCreateServingInfoFor fails (a
		// conversion webhook's caBundle that does not parse: a CRD
		// whose names are accepted but that is not established).
		return nil, "", false, wire.NewInternalError(errors.New("error resolving resource"))
	}
	if err := customSubresource(res, info); err != nil {
		return nil, "", false, err
	}
	if info.Subresource == "" && info.Verb == "" {
		return nil, "", false, wire.NewMethodNotSupported(res.gr(), "")
	}
	return res, ns, info.Subresource == "status", nil
}

// unnamedWrite is the answer of kube's update and patch handlers to a PUT
// or PATCH without a name, which only a custom resource's collection
// routes to them (customRoute): a patch's type is checked first (415),
// then the name (400), before the Accept header or the body.
func (c *call) unnamedWrite(info *request.Info) error {
	if c.name != "" || info.Verb != "update" && info.Verb != "patch" {
		return nil
	}
	if info.Verb == "patch" {
		if _, err := c.patchContentType(); err != nil {
			return err
		}
	}
	return wire.NewBadRequest("name must be provided")
}

// handlerMethod is the router's answer for a resource served by a
// handler of its own, before the handler looks at the body's type or
// Accept: 404 for a path it does not route (a subresource; a name below
// bindings), 405 for a verb it does not take on a path it routes:
// bindings take POST on the collection only, componentstatuses GET
// (verbList). A watch is left to the handler, as kube's list handler
// refuses it.
func handlerMethod(res *resource, info *request.Info) error {
	verbs := res.verbList
	switch {
	case info.Subresource != "", verbs == nil && info.Name != "":
		return notFoundPath()
	case verbs == nil:
		verbs = []string{"create"}
	}
	if info.Verb == "watch" || slices.Contains(verbs, info.Verb) {
		return nil
	}
	return methodNotAllowed()
}

// serveResource runs the verb of a resource request, traced.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info *request.Info) {
	res, ns, statusOK, err := s.target(info, r.Method)
	if err != nil {
		if isNoRoute(err) {
			writeNoRoute(w, r)
			return
		}
		writeError(w, err)
		return
	}
	verb := info.Verb
	if verb == "" {
		verb = strings.ToLower(r.Method) // OPTIONS on a proxy (podsub.go)
	}
	tr := trace.New(strings.ToUpper(verb[:1])+verb[1:],
		slog.String("url", r.URL.RequestURI()), slog.String("resource", res.gr().String()))
	// A watch, log or exec lasts as long as it lasts: as kube, only other
	// requests are logged when slow.
	if !filters.IsLongRunning(r) {
		defer tr.LogIfLong(r.Context(), s.log, s.slow)
	}
	ctx := trace.WithTrace(r.Context(), tr)
	req := &call{s: s, w: w, r: r.WithContext(ctx), res: res, ns: ns, name: info.Name, tr: tr, status: statusOK, warn: &responseWarnings{},
		scale: servesScale(res, info), finalize: info.Subresource == "finalize", sub: servesSub(res, info),
		noTable: !tableConverts(res, info)}
	if res.deprecated != "" {
		req.warnStrict(strictErrors{res.deprecated})
	}
	if err := req.unnamedWrite(info); err != nil {
		writeResourceError(w, r, err)
		return
	}
	if !isConnect(res, info) {
		if err := req.acceptable(info); err != nil {
			writeResourceError(w, r, err)
			return
		}
		if info.Verb != "watch" && req.out.yaml {
			yw := &yamlWriter{ResponseWriter: w}
			defer yw.finish()
			w, req.w = yw, yw
		}
	}
	switch {
	case res.handler != nil:
		err = res.handler(req, info)
	case res.subCreate[info.Subresource] != nil:
		err = res.subCreate[info.Subresource](req)
	case res.virtual && info.Verb == "create":
		err = req.review()
	case isTokenRequest(res, info):
		err = req.tokenRequest()
	case isConnect(res, info) && !res.virtual && res.handler == nil:
		err = req.serveConnect(info)
	case res.virtual:
		err = methodNotAllowed()
	case info.Verb == "get":
		err = req.get()
	case info.Verb == "list":
		err = req.list()
	case info.Verb == "watch":
		err = req.watch()
	case info.Verb == "create":
		err = req.create()
	case info.Verb == "update":
		err = req.update()
	case info.Verb == "patch":
		err = req.patch()
	case info.Verb == "delete":
		err = req.delete()
	case info.Verb == "deletecollection":
		if res.plural == "namespaces" && res.group == "" {
			// kube registers no DELETE on the namespace collection:
			// its router's 405, so no namespace (default, kube-system…)
			// goes by deletecollection.
			err = methodNotAllowed()
			break
		}
		err = req.deleteCollection()
	default:
		err = methodNotAllowed()
	}
	if err != nil {
		writeResourceError(w, r, err)
	}
}

// call is one resource request being served.
type call struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	res  *resource
	ns   string
	name string
	tr   *trace.Trace
	// readDone: the value the call answers was read already, as its
	// version reads it (a GET's conversion, crConversion.convert), and is
	// not read again (servedWritten).
	readDone bool
	// status: the request is on the status subresource; a write keeps
	// everything of the stored object but its .status.
	status bool
	// scale: the request is on a custom resource's scale subresource
	// (scale.go).
	scale bool
	// scaleUntyped: the Scale a PUT sent named no apiVersion or kind,
	// which a custom resource's Scale field manager cannot convert
	// (scale_fields.go).
	scaleUntyped bool
	// finalize: the request is on a namespace's finalize subresource; a
	// write may change spec.finalizers, not status.
	finalize bool
	// sub: the request is on another subresource updating the object
	// with a strategy of its own (typedKind.subs), named so; "" if not.
	sub string
	// applied: the write is a server-side apply, whose field manager
	// ran already (ssa.go).
	applied bool
	// createRV is the resourceVersion of a new object once mutating
	// admission has run (admit), nil for none: kube's storage refuses a
	// create that still names one.
	createRV json.RawMessage
	// mutated is a create's object as mutating admission left it, before
	// it was named from its generateName (a *doc for a custom resource, a
	// runtime.Object for a built-in kind): a create tried again under
	// another name starts from it, as kube's store retries after the
	// handler's admission, so webhooks are called once.
	mutated any
	// lifecycleName, when set, is the name kube's NamespaceLifecycle
	// admission gives the create under way (create.go): its check of the
	// namespace runs at the start of mutating admission, then this is
	// cleared.
	lifecycleName string
	// evictAttrs and evictOI: an eviction's admission attributes, for
	// the validating chain evictPod runs (eviction.go).
	evictAttrs admission.Attributes
	evictOI    admission.ObjectInterfaces
	// warn is the response's Warning headers (warnings.go); copies of
	// the call share it.
	warn *responseWarnings
	// written is the typed object a create or update just stored,
	// resourceVersion set, for a protobuf response (typedview.go).
	written writtenObject
	// allocated finishes a Service's cluster IP and node port
	// allocation (servicealloc.go); nil if none is pending.
	allocated genericregistry.FinishFunc
	// noTable: kube's storage behind the endpoint makes no Tables, so
	// none is offered (tableConverts, subtable.go).
	noTable bool
	// negotiated says out and outErr hold the negotiation of the
	// response's form (output), done once per request.
	negotiated bool
	out        output
	outErr     error
	// body and sent are a JSON or YAML create or update body of a
	// built-in kind or a custom resource, as JSON and as sent, for kube's
	// message when a later decoding of it fails (decodeerr.go); nil
	// otherwise.
	body, sent []byte
}

// writeObject writes one stored value (with its resourceVersion) as the
// response, in the form the client accepts.
func (c *call) writeObject(code int, value []byte) error {
	out, err := c.output()
	if err != nil {
		return err
	}
	if err := c.asPartial(out, false); err != nil {
		return err
	}
	if out.proto {
		return c.writeProtoObject(code, out, value)
	}
	if value, err = c.servedWritten(value); err != nil {
		return err
	}
	switch out.form {
	case formTable:
		// A Table of one object has its resourceVersion, as kube's.
		var v struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(value, &v)
		opts, err := c.tableOptions(out)
		if err != nil {
			return err
		}
		t, err := c.table(opts, [][]byte{value}, wire.ListMeta{ResourceVersion: v.Metadata.ResourceVersion})
		if err != nil {
			return err
		}
		writeJSON(c.w, code, t)
	case formPartial:
		po, err := partialObject(value, out.metaAPIVersion())
		if err != nil {
			return err
		}
		writeRaw(c.w, code, po)
	default:
		writeRaw(c.w, code, value)
	}
	c.tr.Step("Writing http response done")
	return nil
}
