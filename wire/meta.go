package wire

import "encoding/json"

// TypeMeta is the kind and apiVersion every document carries, in kube's
// order, so that documents encode as kube's do.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// ListMeta is the metadata of a list or a Status.
type ListMeta struct {
	ResourceVersion    string `json:"resourceVersion,omitempty"`
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

// ObjectMeta is the metadata every stored object has. Fields listwatch does
// not interpret (ownerReferences, managedFields) are kept as raw JSON.
type ObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	SelfLink                   string            `json:"selfLink,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	Generation                 int64             `json:"generation,omitempty"`
	CreationTimestamp          string            `json:"creationTimestamp,omitempty"`
	DeletionTimestamp          string            `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	OwnerReferences            json.RawMessage   `json:"ownerReferences,omitempty"`
	Finalizers                 []string          `json:"finalizers,omitempty"`
	ManagedFields              json.RawMessage   `json:"managedFields,omitempty"`
}

// PartialObject is an object's type and metadata, the rest left undecoded.
// Decoding a stored object into it reads only what routing, validation,
// selectors and tables need.
type PartialObject struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta `json:"metadata"`
}

// List is the list envelope, generic over the item type. Use
// List[json.RawMessage] to pass items through without decoding them.
type List[T any] struct {
	TypeMeta `json:",inline"`
	Metadata ListMeta `json:"metadata"`
	Items    []T      `json:"items"`
}

// EventType is a watch event's type.
type EventType string

const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// Event is one line of a watch stream. For Error events Object is a Status.
type Event[T any] struct {
	Type   EventType `json:"type"`
	Object T         `json:"object"`
}

// AnnotationInitialEventsEnd marks the BOOKMARK that ends the initial
// events of a watch with sendInitialEvents=true.
const AnnotationInitialEventsEnd = "k8s.io/initial-events-end"

// DeleteOptions is the body a DELETE may carry.
type DeleteOptions struct {
	TypeMeta           `json:",inline"`
	GracePeriodSeconds *int64         `json:"gracePeriodSeconds,omitempty"`
	Preconditions      *Preconditions `json:"preconditions,omitempty"`
	PropagationPolicy  *string        `json:"propagationPolicy,omitempty"`
	DryRun             []string       `json:"dryRun,omitempty"`
}

// Preconditions must hold for a delete to proceed.
type Preconditions struct {
	UID             *string `json:"uid,omitempty"`
	ResourceVersion *string `json:"resourceVersion,omitempty"`
}
