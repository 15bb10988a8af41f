// Package demo is the controller behind `listwatch demo`: a small,
// complete Kubernetes controller built from listwatch's own parts, and the
// scripted scenario that shows it working.
//
// The controller, Mirror, keeps a copy of every ConfigMap's data in a
// second ConfigMap named <name>-mirror, annotated with MirrorOfAnnotation
// so it knows which copies it owns. It is level-triggered, as every
// controller should be: Reconcile sees only a key, reads the desired state
// (the source) and the actual state (the mirror) from the informer's cache,
// and makes the second match the first. An event on a mirror enqueues its
// source (SourceKey), so deleting or editing a mirror by hand is undone.
//
// Run wires an informer, the controller and a scripted series of changes
// against any API server (listwatch serve, or a real cluster):
//
//	create the source         → the controller creates the mirror
//	update the source         → the controller updates the mirror
//	delete the mirror by hand → the controller restores it
//	delete the source         → the controller deletes the mirror
//
// Every step waits for its outcome to be observed (the controller's action
// and the informer's event), never for a fixed time, so the run is as fast
// as the server and ends by itself. Run returns a Summary.
//
// # Caveats
//
// The cache can be behind the server: a reconcile may find the mirror
// missing from the cache just after creating it. Mirror handles that by
// falling back to a live read on AlreadyExists; an update that loses a
// race fails with Conflict and the controller retries it.
package demo
