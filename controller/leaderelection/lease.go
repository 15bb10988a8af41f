package leaderelection

import (
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// Lease is a coordination.k8s.io/v1 Lease, the object leader election
// competes for. Its JSON is Kubernetes' wire form.
type Lease struct {
	wire.TypeMeta `json:",inline"`
	Metadata      wire.ObjectMeta `json:"metadata"`
	Spec          LeaseSpec       `json:"spec"`
}

// LeaseSpec is the part of a Lease the candidates write.
type LeaseSpec struct {
	// HolderIdentity is the current leader; empty when the lease was
	// released.
	HolderIdentity string `json:"holderIdentity,omitempty"`
	// LeaseDurationSeconds is how long others must wait, after they last
	// saw the lease change, before taking it.
	LeaseDurationSeconds int32 `json:"leaseDurationSeconds,omitempty"`
	// AcquireTime is when the current holder acquired the lease.
	AcquireTime MicroTime `json:"acquireTime,omitzero"`
	// RenewTime is when the holder last renewed it.
	RenewTime MicroTime `json:"renewTime,omitzero"`
	// LeaseTransitions counts changes of holder.
	LeaseTransitions int32 `json:"leaseTransitions,omitempty"`
}

// Lease type identity.
const (
	APIVersion = "coordination.k8s.io/v1"
	Kind       = "Lease"
)

// GetNamespace implements object.Object.
func (l *Lease) GetNamespace() string { return l.Metadata.Namespace }

// GetName implements object.Object.
func (l *Lease) GetName() string { return l.Metadata.Name }

// GetResourceVersion implements object.Object.
func (l *Lease) GetResourceVersion() string { return l.Metadata.ResourceVersion }

// SetResourceVersion implements object.Object.
func (l *Lease) SetResourceVersion(rv string) { l.Metadata.ResourceVersion = rv }

// GetLabels implements object.Object.
func (l *Lease) GetLabels() map[string]string { return l.Metadata.Labels }

// GetAnnotations implements object.Object.
func (l *Lease) GetAnnotations() map[string]string { return l.Metadata.Annotations }

var _ object.Object = (*Lease)(nil)
