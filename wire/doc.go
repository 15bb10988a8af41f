// Package wire holds the Kubernetes wire types that listwatch speaks: the
// list envelope, watch events, Status errors, list options, discovery
// documents and the Table form that kubectl asks for.
//
// Only the shapes are here; behaviour lives in client and server. Field names
// and JSON tags follow Kubernetes exactly, so a document written by
// kube-apiserver decodes into these types and back without loss of meaning.
//
// The types, by use:
//
//   - List[T] and Event[T]: a LIST response ({kind, apiVersion, metadata:
//     {resourceVersion, continue, remainingItemCount}, items}) and one
//     newline-framed WATCH event ({type, object}); generic over the item.
//   - ListOptions: the query of a LIST or WATCH. Query and
//     ParseListOptions are inverses (a round trip is tested and fuzzed), so
//     client and server agree on every parameter's spelling.
//   - Status: every error the API speaks. It implements error; ReasonOf and
//     CodeOf read it from any wrapped error, and the New… constructors
//     (NewNotFound, NewConflict, NewResourceExpired, NewGone, …) build the
//     exact code, reason and message Kubernetes sends. Clients classify with
//     client.IsNotFound and its siblings, which, as apimachinery's, fall
//     back to the HTTP code when the reason is not one Kubernetes defines
//     (none, or a webhook's free text).
//   - Discovery documents, Table (what kubectl get asks for), PartialObject
//     metadata, ObjectMeta and DeleteOptions.
//
// Caveat: Status.Reason is the stable classification; Status.Message is for
// people and changes between Kubernetes versions. A 410 comes with reason
// Expired (a resourceVersion or continue token too old) from current
// servers and Gone from older ones: treat both alike.
package wire
