package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	kubeauthorizer "k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	kstorage "k8s.io/apiserver/pkg/storage"
	apiproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	kubecontrolplane "k8s.io/kubernetes/pkg/controlplane/apiserver"
	kubeletclient "k8s.io/kubernetes/pkg/kubelet/client"
	noderest "k8s.io/kubernetes/pkg/registry/core/node/rest"
	podrest "k8s.io/kubernetes/pkg/registry/core/pod/rest"
	svcreg "k8s.io/kubernetes/pkg/registry/core/service"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// The streaming and proxy subresources of pods, services and nodes:
// pods/log, pods/exec, pods/attach, pods/portforward, pods/proxy,
// services/proxy and nodes/proxy. They are kube's own REST objects
// (k8s.io/kubernetes/pkg/registry/core/{pod,node,service}) over getters of
// this server's store: pods/log is kube's LogREST, exec, attach and
// portforward kube's ExecREST, AttachREST and PortForwardREST (which also
// require create on the subresource for a websocket GET, as kube 1.37
// does), the proxies kube's ProxyRESTs. Their query parameters are decoded
// by kube's parameter codec (PodLogOptions, PodExecOptions…), a kubelet's
// address comes from the Node object through kube's
// NodeConnectionInfoGetter, and the connection is kube's upgrade-aware
// proxy (k8s.io/apimachinery/pkg/util/proxy) with kube-apiserver's
// transports: the kubelet client of its defaults (port 10250, kube's
// preferred address types, 5 s timeout, and, as kube's kubelet client
// when no kubelet CA is configured, TLS without verification) and its proxy transport for pod
// and service proxies (TLS unverified: IP-based).

// connectSub is a subresource served by a kube REST object: the HTTP
// methods kube routes to it and its discovery entry.
type connectSub struct {
	methods []string
	verbs   []string
	kind    string
	// subpath: the subresource takes a path after it (…/proxy/{path}).
	subpath bool
}

var (
	upgradeMethods = []string{http.MethodGet, http.MethodPost}
	proxyMethods   = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
	proxyVerbs     = []string{"create", "delete", "get", "patch", "update"}
)

// connectSubs are those subresources, by core resource and subresource.
var connectSubs = map[string]map[string]connectSub{
	"pods": {
		"attach":      {methods: upgradeMethods, verbs: []string{"create", "get"}, kind: "PodAttachOptions"},
		"exec":        {methods: upgradeMethods, verbs: []string{"create", "get"}, kind: "PodExecOptions"},
		"log":         {methods: []string{http.MethodGet}, verbs: []string{"get"}, kind: "Pod"},
		"portforward": {methods: upgradeMethods, verbs: []string{"create", "get"}, kind: "PodPortForwardOptions"},
		"proxy":       {methods: proxyMethods, verbs: proxyVerbs, kind: "PodProxyOptions", subpath: true},
	},
	"services": {
		"proxy": {methods: proxyMethods, verbs: proxyVerbs, kind: "ServiceProxyOptions", subpath: true},
	},
	"nodes": {
		"proxy": {methods: proxyMethods, verbs: proxyVerbs, kind: "NodeProxyOptions", subpath: true},
	},
}

// connectSubOf returns the connect subresource info asks for on res.
func connectSubOf(res *resource, info *request.Info) (connectSub, bool) {
	if res.group != "" || res.crd != "" || info.Subresource == "" || info.Name == "" {
		return connectSub{}, false
	}
	sub, ok := connectSubs[res.plural][info.Subresource]
	return sub, ok
}

// createSubDiscovery are the discovery entries of the create-only
// subresources (resource.subCreate): kind, and group and version when
// they are not the resource's.
var createSubDiscovery = map[string]wire.APIResource{
	"binding":  {Kind: "Binding"},
	"eviction": {Group: "policy", Version: "v1", Kind: "Eviction"},
}

// connectDiscovery appends the discovery entries of r's connect and
// create-only subresources.
func connectDiscovery(list []wire.APIResource, r *resource) []wire.APIResource {
	if r.group != "" || r.crd != "" {
		return list
	}
	for n := range r.subCreate {
		if e, ok := createSubDiscovery[n]; ok {
			e.Name, e.Namespaced, e.Verbs = r.plural+"/"+n, r.namespaced, []string{"create"}
			list = append(list, e)
		}
	}
	subs := connectSubs[r.plural]
	names := make([]string, 0, len(subs))
	for n := range subs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		list = append(list, wire.APIResource{
			Name: r.plural + "/" + n, Namespaced: r.namespaced, Kind: subs[n].kind, Verbs: subs[n].verbs,
		})
	}
	return list
}

// isConnect: info is a request on one of res's connect subresources.
func isConnect(res *resource, info *request.Info) bool {
	_, ok := connectSubOf(res, info)
	return ok
}

// subresourceParts are the path segments after {resource}/{name}/{sub}.
func subresourceParts(path string, info *request.Info) []string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == info.Resource && parts[i+1] == info.Name && parts[i+2] == info.Subresource {
			return parts[i+3:]
		}
	}
	return nil
}

// kubeletConfig is kube-apiserver's default kubelet client configuration
// (cmd/kube-apiserver/app/options), used when Config.KubeletClient is nil.
func kubeletConfig() kubeletclient.KubeletClientConfig {
	return kubeletclient.KubeletClientConfig{
		Port:         10250,
		ReadOnlyPort: 10255,
		PreferredAddressTypes: []string{
			string(api.NodeHostName), string(api.NodeInternalDNS), string(api.NodeInternalIP),
			string(api.NodeExternalDNS), string(api.NodeExternalIP),
		},
		HTTPTimeout: 5e9,
	}
}

// connectors are the kube REST objects serving the connect subresources.
type connectors struct {
	log          *podrest.LogREST
	exec         *podrest.ExecREST
	attach       *podrest.AttachREST
	portForward  *podrest.PortForwardREST
	podProxy     *podrest.ProxyREST
	nodeProxy    *noderest.ProxyREST
	serviceProxy *svcreg.ProxyREST
	kubelet      kubeletclient.ConnectionInfoGetter
}

// installConnectors builds kube's REST objects over the store.
func (s *Server) installConnectors(cfg Config) error {
	kc := kubeletConfig()
	if cfg.KubeletClient != nil {
		kc = *cfg.KubeletClient
	}
	getters := storeGetters{store: s.store}
	nodes := kubeletclient.NodeGetterFunc(func(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.Node, error) {
		if err := pathNameError(name); err != nil { // the node registry's key function
			return nil, asKubeError(err)
		}
		kv, err := s.store.Get(ctx, "/registry/minions/"+name)
		if errors.Is(err, storage.ErrNotFound) {
			// kube reads nodes through the node registry's Store, which
			// names the resource of the request (pods "<node>" not found
			// for a pods/log of a pod on a missing node).
			gr := schema.GroupResource{Resource: "nodes"}
			if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
				gr = schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
			}
			return nil, apierrors.NewNotFound(gr, name)
		}
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		node := &corev1.Node{}
		if err := json.Unmarshal(kv.Value, node); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return node, nil
	})
	kubelet, err := kubeletclient.NewNodeConnectionInfoGetter(nodes, kc)
	if err != nil {
		return fmt.Errorf("server: kubelet client: %w", err)
	}
	authz := cfg.Authorizer
	if authz == nil {
		authz = auth.NewAuthorizer(nil)
	}
	ka := kubeauthorizer.AuthorizerFunc(auth.KubeAuthorizer{Authorizer: authz}.Authorize)
	proxyTransport := kubecontrolplane.CreateProxyTransport()
	pods := &genericregistry.Store{
		NewFunc:                  func() runtime.Object { return &api.Pod{} },
		DefaultQualifiedResource: api.Resource("pods"),
		KeyFunc: func(ctx context.Context, name string) (string, error) {
			return genericregistry.NamespaceKeyFunc(ctx, "/pods", name)
		},
		Storage: genericregistry.DryRunnableStorage{Storage: getterStorage{g: getters, resource: "pods"}},
	}
	podGetter := getters.of("pods")
	s.connect = &connectors{
		log:          &podrest.LogREST{KubeletConn: kubelet, Store: pods},
		exec:         &podrest.ExecREST{Store: podGetter, KubeletConn: kubelet, Authorizer: ka},
		attach:       &podrest.AttachREST{Store: podGetter, KubeletConn: kubelet, Authorizer: ka},
		portForward:  &podrest.PortForwardREST{Store: podGetter, KubeletConn: kubelet, Authorizer: ka},
		podProxy:     &podrest.ProxyREST{Store: pods, ProxyTransport: proxyTransport},
		nodeProxy:    &noderest.ProxyREST{Connection: kubelet, ProxyTransport: proxyTransport},
		serviceProxy: &svcreg.ProxyREST{Redirector: serviceRedirector{s: s, pods: podGetter, transport: proxyTransport}, ProxyTransport: proxyTransport},
		kubelet:      kubelet,
	}
	return nil
}

// getterStorage is a k8s.io/apiserver storage.Interface of which only Get
// is implemented (kube's REST objects here only read).
type getterStorage struct {
	kstorage.Interface
	g        storeGetters
	resource string
}

// Get reads the object at key ("/pods/<ns>/<name>").
func (s getterStorage) Get(ctx context.Context, key string, _ kstorage.GetOptions, into runtime.Object) error {
	err := s.g.read(ctx, s.resource, "/registry"+key, into)
	if errors.Is(err, storage.ErrNotFound) {
		return kstorage.NewKeyNotFoundError(key, 0)
	}
	return err
}

// connectStatus is kube's Status for an error of a REST object: an
// APIStatus as is, any other error a 500 with its text (kube's
// responsewriters.ErrorToAPIStatus).
func connectStatus(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return kubeStatus(err)
	}
	return kubeStatus(&apierrors.StatusError{ErrStatus: *responsewriters.ErrorToAPIStatus(err)})
}

// connectResponder is the rest.Responder given to kube's connect handlers.
type connectResponder struct{ w http.ResponseWriter }

func (r connectResponder) Object(code int, obj runtime.Object) {
	b, err := runtime.Encode(legacyscheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), obj)
	if err != nil {
		writeError(r.w, wire.NewInternalError(err))
		return
	}
	writeRaw(r.w, code, b)
}

func (r connectResponder) Error(err error) { writeError(r.w, connectStatus(err)) }

// kubeContext is the request's context as kube's REST objects read it:
// namespace, request info and user.
func (c *call) kubeContext(info *request.Info) context.Context {
	ctx := genericapirequest.WithNamespace(c.r.Context(), c.ns)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Path: c.r.URL.Path, Verb: info.Verb, APIPrefix: info.APIPrefix,
		APIGroup: info.APIGroup, APIVersion: info.APIVersion, Namespace: c.ns, Resource: info.Resource,
		Subresource: info.Subresource, Name: info.Name,
		Parts: strings.Split(strings.Trim(c.r.URL.Path, "/"), "/"),
	})
	if u, ok := request.UserFrom(c.r.Context()); ok {
		ctx = genericapirequest.WithUser(ctx, auth.UserToKube(u))
	}
	return ctx
}

// decodeOptions decodes the query (and, for a proxy, the path after the
// subresource as its "path") into opts with kube's parameter codec; a bad
// value is kube's 400.
func (c *call) decodeOptions(info *request.Info, opts runtime.Object, subpath bool, key string) error {
	query := c.r.URL.Query()
	if subpath {
		p := strings.Join(subresourceParts(c.r.URL.Path, info), "/")
		if p != "" {
			p = "/" + p
		}
		if strings.HasSuffix(c.r.URL.Path, "/") && !strings.HasSuffix(p, "/") {
			p += "/"
		}
		query[key] = []string{p}
	}
	if err := legacyscheme.ParameterCodec.DecodeParameters(query, corev1.SchemeGroupVersion, opts); err != nil {
		return kubeStatus(apierrors.NewBadRequest(err.Error()))
	}
	return nil
}

// serveConnect answers a request on a connect subresource as kube's
// handlers do: pods/log as a getter with options streaming the kubelet's
// answer (204 No Content for a pod on no node), the others as connecters
// (dryRun refused) whose handler then serves the request.
func (c *call) serveConnect(info *request.Info) error {
	if c.s.connect == nil {
		return notFoundPath()
	}
	if sub, _ := connectSubOf(c.res, info); !slices.Contains(sub.methods, c.r.Method) {
		return methodNotAllowed() // kube registers only these methods
	}
	ctx := c.kubeContext(info)
	if c.res.plural == "pods" && info.Subresource == "log" {
		opts, _, _ := c.s.connect.log.NewGetOptions()
		if err := c.decodeOptions(info, opts, false, ""); err != nil {
			return err
		}
		out, err := c.s.connect.log.Get(ctx, c.name, opts)
		if err != nil {
			return connectStatus(err)
		}
		r := c.r.WithContext(ctx)
		responsewriters.StreamObject(http.StatusOK, corev1.SchemeGroupVersion, legacyscheme.Codecs,
			out.(rest.ResourceStreamer), hijackWriter{c.w}, r)
		return nil
	}
	if len(c.r.URL.Query()["dryRun"]) != 0 {
		return kubeStatus(apierrors.NewBadRequest("dryRun is not supported"))
	}
	var connecter rest.Connecter
	switch c.res.plural + "/" + info.Subresource {
	case "pods/exec":
		connecter = c.s.connect.exec
	case "pods/attach":
		connecter = c.s.connect.attach
	case "pods/portforward":
		connecter = c.s.connect.portForward
	case "pods/proxy":
		connecter = c.s.connect.podProxy
	case "nodes/proxy":
		connecter = c.s.connect.nodeProxy
	case "services/proxy":
		connecter = c.s.connect.serviceProxy
	default:
		return notFoundPath()
	}
	opts, subpath, key := connecter.NewConnectOptions()
	if err := c.decodeOptions(info, opts, subpath, key); err != nil {
		return err
	}
	if err := c.admitConnect(info.Subresource, opts); err != nil {
		return err
	}
	h, err := connecter.Connect(ctx, c.name, opts, connectResponder{c.w})
	if err != nil {
		return connectStatus(err)
	}
	h.ServeHTTP(hijackWriter{c.w}, c.r.WithContext(ctx))
	return nil
}

// hijackWriter gives kube's handlers the http.Hijacker and http.Flusher
// they assert (to upgrade exec, attach, portforward and proxied
// connections, and to flush followed logs) through the filters' writers,
// which only unwrap (http.ResponseController finds the connection's).
type hijackWriter struct{ http.ResponseWriter }

func (h hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}

func (h hijackWriter) Flush() { _ = http.NewResponseController(h.ResponseWriter).Flush() }

func (h hijackWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// listAll reads every object under prefix at one revision.
func (s *Server) listAll(ctx context.Context, prefix string) ([]storage.KV, error) {
	var out []storage.KV
	opts := storage.ListOptions{Limit: 500}
	for {
		res, err := s.store.List(ctx, prefix, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Items...)
		if !res.More || len(res.Items) == 0 {
			return out, nil
		}
		opts = storage.ListOptions{Limit: 500, Revision: res.Revision, StartKey: res.Items[len(res.Items)-1].Key + "\x00"}
	}
}

// serviceRedirector is kube's service ResourceLocation
// (pkg/registry/core/service/storage) over the store: "name",
// "name:port" or "scheme:name:port"; a port number must be one of the
// service's ports (503 otherwise); a random ready endpoint of the
// service's EndpointSlices serving that port whose address is a pod's IP
// (kube's apiserver proxy.RandomEndpoint); 503 when there is none.
type serviceRedirector struct {
	s         *Server
	pods      rest.Getter
	transport http.RoundTripper
}

func (r serviceRedirector) ResourceLocation(ctx context.Context, id string) (*url.URL, http.RoundTripper, error) {
	scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
	if !valid {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	namespace := genericapirequest.NamespaceValue(ctx)
	if portNum, err := strconv.ParseInt(port, 10, 64); err == nil {
		if err := keyError(true, namespace, name); err != nil { // kube's services store reads it by key
			return nil, nil, asKubeError(err)
		}
		kv, err := r.s.store.Get(ctx, "/registry/services/specs/"+namespace+"/"+name)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil, apierrors.NewNotFound(api.Resource("services"), name)
		}
		if err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		svc := &corev1.Service{}
		if err := json.Unmarshal(kv.Value, svc); err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		found := false
		for _, p := range svc.Spec.Ports {
			if int64(p.Port) == portNum {
				port, found = p.Name, true
				break
			}
		}
		if !found {
			return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", portNum, name))
		}
	}
	if namespace == "" {
		return nil, nil, apierrors.NewBadRequest("missing required namespace")
	}
	kvs, err := r.s.listAll(ctx, "/registry/endpointslices/"+namespace+"/")
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	var eps []*discoveryv1.EndpointSlice
	for _, kv := range kvs {
		es := &discoveryv1.EndpointSlice{}
		if err := json.Unmarshal(kv.Value, es); err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		if es.Labels[discoveryv1.LabelServiceName] == name {
			eps = append(eps, es)
		}
	}
	if len(eps) == 0 {
		return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	hostPort, err := apiproxy.RandomEndpoint(name, eps, port, corev1.IPv4Protocol, func(ep *discoveryv1.Endpoint) bool {
		return r.validAddress(ctx, ep) == nil
	})
	if err != nil {
		return nil, nil, err
	}
	return &url.URL{Scheme: scheme, Host: hostPort}, r.transport, nil
}

// validAddress: the endpoint is a pod of the namespace whose IPs include
// the endpoint's address (kube proxies only to pods).
func (r serviceRedirector) validAddress(ctx context.Context, ep *discoveryv1.Endpoint) error {
	if ep.TargetRef == nil {
		return errors.New("endpoint has no target ref")
	}
	if genericapirequest.NamespaceValue(ctx) != ep.TargetRef.Namespace {
		return errors.New("endpoint namespace doesn't match context namespace")
	}
	obj, err := r.pods.Get(ctx, ep.TargetRef.Name, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, ip := range obj.(*api.Pod).Status.PodIPs {
		if ip.IP == ep.Addresses[0] {
			return nil
		}
	}
	return errors.New("pod ip(s) doesn't match endpoint ip")
}
