// Package controllers runs, inside `listwatch serve`, the controllers a
// Kubernetes control plane runs in kube-controller-manager and that a
// client of the API can see the effect of:
//
//   - namespace-controller (alias namespace): empties a Terminating
//     namespace of every namespaced resource, built-in or custom, sets its
//     NamespaceDeletion*/Namespace*Remaining conditions, and removes the
//     "kubernetes" finalizer through /finalize, after which the server
//     removes the namespace.
//   - serviceaccount-controller (alias serviceaccount): a "default"
//     ServiceAccount in every active namespace.
//   - root-ca-certificate-publisher-controller (alias
//     root-ca-cert-publisher): the "kube-root-ca.crt" ConfigMap with the
//     server's CA in every active namespace.
//   - garbage-collector-controller (alias garbagecollector): deletes the
//     dependents whose owners are gone (background propagation).
//
// They are built on listwatch's own library, as any controller would be:
// they talk to the server over HTTPS with a client.Client (an admin
// identity on the loopback address), watch with informer.Informer over
// *object.Unstructured, and reconcile keys with controller.Controller.
// That is the library proving itself inside the product.
//
// # Lifecycle
//
// A Host is built with New (which starts nothing) and run with Run, which
// returns once every goroutine it started has ended. When several servers
// share one etcd, only one runs the controllers at a time: Run campaigns
// for the Lease kube-system/kube-controller-manager (the name
// kube-controller-manager uses) with controller/leaderelection, starts
// the controllers when it leads and stops them when it stops leading.
// Each term of leadership builds fresh informers and controllers.
//
// # Choosing controllers
//
// Config.Controllers is kube-controller-manager's --controllers list: "*"
// enables every controller on by default, "name" enables one, "-name"
// disables one, and the first entry naming a controller wins. An empty
// list runs none: the server then behaves as kube-apiserver alone (as
// envtest does), and a deleted namespace stays Terminating.
//
// # Observability
//
// Logs go to Config.Logger with a "controller" attribute; the
// controller_* and workqueue_* metrics of package controller, and the
// informers' reflector metrics, go to Config.Registerer.
package controllers
