package server

import (
	"encoding/json"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resources stored as another version or group than they are served in,
// as kube-apiserver stores them: HorizontalPodAutoscalers are stored as
// autoscaling/v2 and served as autoscaling/v1 too; events.k8s.io/v1
// Events are stored as core v1 Events, in the same keys. Writes convert
// the request's object through kube's internal type to the stored
// version (encodeInto); reads convert each stored value to the served
// version (toServed), JSON and protobuf alike, through the scheme's own
// conversions. Every other resource keeps the fast path: stored bytes are
// sent as they are.

// stored is the version t's objects are stored in.
func (t *typedKind) stored() schema.GroupVersionKind {
	if t.storage.Empty() {
		return t.external
	}
	return t.storage
}

// converts reports whether t is stored as another version or kind.
func (t *typedKind) converts() bool {
	return !t.storage.Empty() && t.storage != t.external
}

// toServed converts a stored value of r (its resourceVersion set) to r's
// version. A value that does not convert, which admission makes
// impossible, is logged and sent as stored.
func (r *resource) toServed(value []byte) []byte {
	t := r.typed()
	b, err := t.convertValue(value)
	if err != nil {
		slog.Error("server: converting a stored object", slog.String("resource", r.gr().String()),
			slog.String("version", r.version), slog.Any("err", err))
		return value
	}
	return b
}

// convertValue decodes a value (in the stored version, or already in the
// served one), converts it through the internal type and encodes it in
// t's served version.
func (t *typedKind) convertValue(value []byte) ([]byte, error) {
	obj, _, err := laxDecoders[t.scheme].Decode(value, nil, nil)
	if err != nil {
		return nil, err
	}
	if obj.GetObjectKind().GroupVersionKind() == t.external {
		return value, nil
	}
	internal, err := t.internalOf(obj)
	if err != nil {
		return nil, err
	}
	external, err := t.scheme.New(t.external)
	if err != nil {
		return nil, err
	}
	if err := t.scheme.Convert(internal, external, nil); err != nil {
		return nil, err
	}
	external.GetObjectKind().SetGroupVersionKind(t.external)
	return json.Marshal(external)
}

// servedDoc is a stored doc of r in r's version (d itself if it does not
// convert).
func (r *resource) servedDoc(d *doc) *doc {
	b := r.toServed(d.encode())
	out, err := decodeDoc(b)
	if err != nil {
		return d
	}
	return out
}
