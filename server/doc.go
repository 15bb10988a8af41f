// Package server is listwatch's Kubernetes-compatible API server: the
// HTTP API over a storage.Interface (writes and gets) and, per resource,
// a reader (LIST and WATCH), which unmodified kubectl and client-go work
// against.
//
// There are three types: Config, Server and, in server/request, Info. A
// Server is built by New (which starts nothing), serves requests through
// Handler, and does its background work in Run:
//
//	srv, err := server.New(server.Config{Store: store, Reader: direct, Readers: caches})
//	go srv.Run(ctx)                       // default namespaces, CRD watch
//	http.ListenAndServeTLS(addr, cert, key, filters(srv.Handler()))
//
// The server's registry of resources owns each resource's reader: it
// opens one (through Config.Readers: a watch cache per resource) when the
// resource is registered, opens a new one when a CRD's definition changes
// what the reader depends on (scope, served versions, selectable fields),
// and closes it, releasing the cache, its etcd watch and goroutines, when
// the CRD goes. Requests find the resource, and so its reader, in the
// registry when they arrive. Without Config.Readers every resource reads
// through Config.Reader (--disable-watch-cache). The server makes no
// reader of its own and runs none: the assembly (package apiserver)
// chooses them and runs them.
//
// Handler has no authentication, authorization or limits: those are
// filters wrapped around it (server/filters, server/auth), which read the
// request.Info that request.WithRequestInfo puts in the context.
//
// # Resources
//
// Built in: namespaces, configmaps, secrets, pods, services,
// serviceaccounts, events (core v1), coordination.k8s.io/v1 leases and
// apiextensions.k8s.io/v1 customresourcedefinitions. Creating a CRD serves
// its resource at once, in discovery and the API; Run follows the CRDs in
// storage, so servers sharing one etcd all serve them. A CRD is served
// only once its names are accepted: names used in its group by a
// built-in or another CRD are refused (NamesAccepted False, as kube's
// naming controller), so no CRD shadows a built-in; a CRD in a *.k8s.io
// or *.kubernetes.io group needs the api-approved.kubernetes.io
// annotation. Deleting a CRD marks it Terminating (kube's cleanup
// finalizer), and its finalizer (crdfinalizer.go) deletes its custom
// resources, then the CRD itself.
//
// Writes of the built-in kinds go through kube-apiserver's own code
// (kinds.go, kinds_strategy.go): the body is decoded into the k8s.io/api
// type (a wrong type is kube's 400; unknown and duplicate fields follow
// fieldValidation), defaulted and converted with kube's scheme, and passed
// to rest.BeforeCreate/BeforeUpdate with the kind's registry strategy
// (k8s.io/kubernetes/pkg/registry/..., the apiextensions CRD strategy),
// which sets generation, resets status, validates with kube's field paths
// and messages, and enforces immutability; what is stored is the typed
// object re-encoded, so unknown fields are pruned. Custom resources
// follow kube's custom-resource strategy (crstrategy.go) and their CRD's
// schema: validation, pruning, defaulting and CEL rules (crschema.go).
// managedFields and server-side apply are kube's field manager's
// (ssa.go). Services' cluster IPs and node ports are allocated by kube's
// Service REST hooks (servicealloc.go, with the allocators the apiserver
// package runs). Of kube's admission plugins only the webhooks and the
// admission policies run. Objects are stored with no resourceVersion: storage
// injects it on read. Stored JSON starts with apiVersion, kind and
// metadata, so the resourceVersion splice is cheap.
//
// # Wire behaviour
//
// Paths, JSON shapes, status codes, reasons and messages follow
// kube-apiserver: list options validated as kube does (422 Invalid
// ListOptions, 400 for bad selectors and tokens), LIST streamed item by
// item, WATCH as newline-framed JSON events flushed one by one with
// bookmarks and the initial-events-end bookmark, a compacted
// resourceVersion as HTTP 200 plus an ERROR event with 410 Expired,
// Table output for kubectl, and every error a Status.
//
// Responses are JSON or, for the built-in kinds when the Accept header
// chooses it as kube-apiserver's negotiation would (client-go's typed
// clients ask "protobuf, json"), protobuf: objects, lists, watch frames,
// bookmarks and Status errors (proto.go). The watch cache keeps each
// object version's protobuf message once built (storage.Memo), so list
// pages and watch frames are cut from cached bytes; a watch frame is built
// once per event for every watcher asking protobuf. Custom resources and
// Tables are JSON only, as in kube.
//
// # Caveats
//
// Deletion follows kube's generic registry (deleteflow.go, finalize.go): an object with
// finalizers, or given the orphan/foregroundDeletion finalizer by the
// propagation policy, is marked (deletionTimestamp) and stays until a
// write removes its last finalizer; pods bound to a node get their grace
// period (graceful.go), and no kubelet ends it. Nothing acts on the
// garbage collector's finalizers yet. A DELETE of a namespace marks it
// Terminating (namespace.go); the namespace controller empties it and
// removes it, as in kube. A CRD is deleted with its custom
// resources, finalizers or not. An update or patch that would store the
// same bytes is not written (noop.go). The subresources are status (pods,
// services, namespaces, CRDs, and custom resources whose CRD declares
// it): its writes change only .status (and what the kind's status
// strategy allows), and main writes leave .status alone; and scale, an
// autoscaling/v1 Scale of a custom resource whose CRD declares it
// (scale.go). A custom resource's create and update follow kube's own
// customresource strategy: status sent on create is dropped with the
// status subresource, and generation is bumped by any change outside
// metadata. Protobuf request bodies of the
// built-in kinds (client-go's typed clients send them) are converted to
// JSON, and decoded from it as a JSON body is. A protobuf response to a
// write is encoded from the typed object kube's strategy returned, where
// its JSON form decodes back to the same message (typedview.go). Multi-version CRDs convert by relabelling
// apiVersion (conversion strategy None) or through their conversion
// webhook (strategy Webhook, crconvert.go).
package server
