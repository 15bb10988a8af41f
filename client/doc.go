// Package client is a REST client for Kubernetes-compatible API servers: a
// real kube-apiserver, or listwatch serve. It imports nothing from
// k8s.io, yet decodes into any type with object accessors, so *corev1.Pod
// from k8s.io/api works as well as *object.Unstructured.
//
// There are only a few types: Config says where the server is and how to
// authenticate; Client holds one HTTP transport, rate limiter and
// credentials per server; Resource[T] is a typed view of one resource,
// optionally in one namespace; Watcher[T] reads a watch stream.
//
// # Basics
//
//	cfg, err := client.LoadKubeconfig("", "") // $KUBECONFIG, the pod's service account, or ~/.kube/config
//	c, err := client.New(cfg)
//	pods := client.NewResource[*corev1.Pod](c, client.GroupVersionResource{Version: "v1", Resource: "pods"})
//	list, err := pods.Namespace("default").ListAll(ctx, wire.ListOptions{})
//	w, err := pods.Watch(ctx, wire.ListOptions{ResourceVersion: list.Metadata.ResourceVersion, AllowWatchBookmarks: true})
//	defer w.Close()
//	for {
//		ev, err := w.Next() // io.EOF when the server ends the watch
//		...
//	}
//
// Writes take controller-runtime's options, each the query parameter kube
// reads (DryRunAll, FieldOwner, FieldValidation, ForceOwnership); Apply is
// a server-side apply of only the fields the caller owns; Subresource
// addresses an object's status, scale, eviction, binding or token:
//
//	cm, err := cms.Apply(ctx, "settings", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n"),
//		client.FieldOwner("my-controller"), client.ForceOwnership)
//	status := pods.Subresource("status") // keep it: it negotiates protobuf on its own
//	pod.Status.Phase = corev1.PodRunning
//	pod, err = status.Update(ctx, pod, client.FieldOwner("my-controller"))
//	scale, err := client.NewResource[*autoscalingv1.Scale](c, deployments).Namespace(ns).Subresource("scale").Get(ctx, "web")
//	pod, err = pods.Get(ctx, "web", client.ResourceVersion("0")) // any version the server's cache holds
//	err = cms.DeleteCollection(ctx, wire.DeleteOptions{DryRun: []string{"All"}}, wire.ListOptions{LabelSelector: "app=web"})
//
// Config comes from a kubeconfig (LoadKubeconfig: several files merged as
// kubectl merges $KUBECONFIG, tokens, token files, client certificates,
// exec credential plugins, impersonation, proxy-url), from a pod's service
// account (InClusterConfig; LoadKubeconfig("", "") falls back to it in a
// pod when $KUBECONFIG is unset, as controller-runtime's GetConfig does)
// or from a URL and a token (ConfigFromURL). Token and CA files are re-read
// as they rotate. The default User-Agent is client-go's shape with the
// program's name first, which kube-apiserver makes the field manager of
// its writes.
//
// # Discovery
//
// ServerResources reads what the server serves, asking for aggregated
// discovery (apidiscovery.k8s.io/v2) and falling back to the legacy
// documents. ResolveResource turns a name as kubectl takes it ("po",
// "deploy", "widgets.example.com", "deployments.v1.apps") into a
// GroupVersionResource and whether it is namespaced:
//
//	gvr, namespaced, err := c.ResolveResource(ctx, "deploy")
//
// # Guarantees
//
//   - Every request waits on one token bucket per Client (Config.QPS and
//     Burst), with the request's context.
//   - Non-2xx answers are *wire.Status errors; IsNotFound, IsConflict,
//     IsGone and the other Is functions classify them as apimachinery's
//     functions do: by reason and, when the reason is not one apimachinery
//     knows (none, or a webhook's free text), by HTTP code. Each says which
//     apimachinery function it matches.
//   - Retries follow client-go's rule: any request, writes and watches
//     included, answered 429 or 5xx with an integer Retry-After is sent
//     again after the server's delay; a GET whose connection was reset or
//     closed (EOF, HTTP/2 GOAWAY or connection lost), and a watch whose
//     connection closed or timed out, after one second. At most 10
//     retries, each waiting on the rate limiter and the context. Unlike
//     client-go's Watch, a watch whose last retry failed on the connection
//     returns that error rather than an empty watch.
//   - The server's warnings ("Warning: 299 - ..." headers: deprecated
//     APIs, fieldValidation=Warn) of every request, each list page and
//     watch included, go to Config.WarningHandler or, by default, to the
//     logger once per distinct text per Client.
//   - ListAll follows continue tokens and, if one expires, falls back to a
//     single full list, as client-go's pager does. ListEach streams page
//     by page; on an expiry it calls the caller's restart function (the
//     items delivered so far are stale) and delivers a full list from the
//     start, or, with no restart function, returns the expiry.
//   - A request kube would refuse, or that would address another path, is
//     refused unsent with ErrRequest: an empty name, a name, namespace or
//     subresource that is not one path segment ("." or "..", or with '/'
//     or '%': "p/status" never reaches the status of p), ForceOwnership on
//     anything but an apply, a list, watch or delete of a subresource.
//   - A Watcher starts no goroutine; Close from another goroutine unblocks
//     Next. An ERROR event (such as 410 Expired for a resourceVersion too
//     old to watch from) is returned by Next as a *wire.Status.
//
// # Caveats
//
// A Resource of a type with generated protobuf methods (any k8s.io/api
// type) asks for protobuf as client-go does and reads JSON when the server
// answers JSON; its writes are protobuf only after the server has answered
// it in protobuf; a subresource's (Subresource) only once the server has
// answered that subresource in protobuf too, which tells its kind (the
// resource does not: deployments/scale is autoscaling/v1 Scale), or when
// the object's own apiVersion and kind are set. An apply's body is always
// the caller's YAML or JSON. Other types, and Config.DisableProtobuf,
// speak JSON. No CBOR. A subresource that answers a Status rather than an
// object (pods/eviction, pods/binding) gives Create's caller the zero T.
// Basic auth and auth-provider plugins are not supported: a kubeconfig
// context whose user asks for them fails to load, rather than run with
// fewer credentials.
// An exec plugin never gets a terminal, so interactiveMode Always is
// refused.
package client
