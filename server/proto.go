package server

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// Protobuf responses, as kube-apiserver writes them for built-in kinds:
//
//   - an object or a list: "k8s\x00" then a runtime.Unknown message
//     {typeMeta: {apiVersion, kind}, raw: the object's message,
//     contentEncoding: "", contentType: ""};
//   - a list's message: field 1 its ListMeta, then each item as field 2,
//     so a page is cut from the items' cached bytes;
//   - a watch stream: frames of a 4-byte big-endian length and then a
//     metav1.WatchEvent message {type, object: RawExtension{raw: the
//     object in the envelope above}}; the event itself has no envelope.
//
// listwatch stores JSON: an object's message (its item bytes) is converted
// from its JSON once per stored version when the watch cache holds it
// (storage.Memo), per request otherwise.

// protoMagic starts every enveloped protobuf body.
var protoMagic = []byte("k8s\x00")

// protoMarshaler is what the generated k8s.io/api types implement.
type protoMarshaler interface {
	Marshal() ([]byte, error)
}

// protoGVK is the kind whose Go type decodes r's objects, and whether r is
// served in protobuf at all: built-in kinds are, custom resources are not
// (as in kube), nor kinds the scheme does not know.
func protoGVK(r *resource) (schema.GroupVersionKind, bool) {
	if r == nil || r.crd != "" {
		return schema.GroupVersionKind{}, false
	}
	gvk := schema.GroupVersionKind{Group: r.group, Version: r.version, Kind: r.kind}
	return gvk, protobufScheme.Recognizes(gvk)
}

// protoItem converts one stored JSON object of r to its protobuf message.
func protoItem(r *resource, value []byte) ([]byte, error) {
	gvk, ok := protoGVK(r)
	if !ok {
		return nil, fmt.Errorf("no protobuf encoding for %v", gvk)
	}
	obj, err := protobufScheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if r.converted {
		value = r.toServed(value) // convert.go
	}
	return jsonToProto(value, obj)
}

// jsonToProto decodes JSON into obj, as kube's JSON decoder does (field
// names case-sensitive, unknown fields dropped), and encodes obj.
func jsonToProto(value []byte, obj any) ([]byte, error) {
	if err := kjson.UnmarshalCaseSensitivePreserveInts(value, obj); err != nil {
		return nil, fmt.Errorf("decoding stored object: %w", err)
	}
	m, ok := obj.(protoMarshaler)
	if !ok {
		return nil, fmt.Errorf("%T has no protobuf encoding", obj)
	}
	return m.Marshal()
}

// cachedItem is protoItem through the value's memo, if it has one.
func cachedItem(r *resource, value []byte, memo *storage.Memo) ([]byte, error) {
	return memo.Get(func() ([]byte, error) { return protoItem(r, value) })
}

// partialItem is the PartialObjectMetadata message of a stored object, the
// same in meta.k8s.io/v1 and v1beta1 (the envelope says which).
func partialItem(value []byte) ([]byte, error) {
	po, err := partialObject(value, "meta.k8s.io/v1")
	if err != nil {
		return nil, err
	}
	return jsonToProto(po, &metav1.PartialObjectMetadata{})
}

// appendVarint appends v as a protobuf varint.
func appendVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// appendBytesField appends field num (wire type 2) holding p.
func appendBytesField(b []byte, num int, p []byte) []byte {
	b = appendVarint(b, uint64(num)<<3|2)
	b = appendVarint(b, uint64(len(p)))
	return append(b, p...)
}

// fieldLen is the encoded size of a length-delimited field of n bytes
// with a one-byte tag.
func fieldLen(n int) int { return 1 + varintLen(uint64(n)) + n }

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// envelopeHead is the start of an enveloped body whose raw message is
// rawLen bytes long: the magic, the Unknown's typeMeta and raw's header.
// The raw bytes follow, then envelopeTail.
func envelopeHead(apiVersion, kind string, rawLen int) []byte {
	return appendEnvelopeHead(make([]byte, 0, envelopeLen(apiVersion, kind, 0)), apiVersion, kind, rawLen)
}

// appendEnvelopeHead appends envelopeHead(apiVersion, kind, rawLen) to b.
func appendEnvelopeHead(b []byte, apiVersion, kind string, rawLen int) []byte {
	b = append(b, protoMagic...)
	b = appendVarint(b, 1<<3|2) // Unknown.typeMeta
	b = appendVarint(b, uint64(fieldLen(len(apiVersion))+fieldLen(len(kind))))
	b = appendVarint(b, 1<<3|2)
	b = appendVarint(b, uint64(len(apiVersion)))
	b = append(b, apiVersion...)
	b = appendVarint(b, 2<<3|2)
	b = appendVarint(b, uint64(len(kind)))
	b = append(b, kind...)
	b = appendVarint(b, 2<<3|2) // Unknown.raw
	return appendVarint(b, uint64(rawLen))
}

// envelopeLen is the length of an enveloped body whose raw message is
// rawLen bytes long.
func envelopeLen(apiVersion, kind string, rawLen int) int {
	return len(protoMagic) + fieldLen(fieldLen(len(apiVersion))+fieldLen(len(kind))) + fieldLen(rawLen) + len(envelopeTail)
}

// envelopeTail is the Unknown's empty contentEncoding and contentType.
var envelopeTail = []byte{3<<3 | 2, 0, 4<<3 | 2, 0}

// envelope wraps raw as a whole body.
func envelope(apiVersion, kind string, raw []byte) []byte {
	b := envelopeHead(apiVersion, kind, len(raw))
	b = append(b, raw...)
	return append(b, envelopeTail...)
}

// protoListMeta is a list's metadata as its field num (1, but for
// meta.k8s.io/v1beta1's PartialObjectMetadataList).
func protoListMeta(meta wire.ListMeta, num int) ([]byte, error) {
	lm := metav1.ListMeta{ResourceVersion: meta.ResourceVersion, Continue: meta.Continue,
		RemainingItemCount: meta.RemainingItemCount}
	b, err := lm.Marshal()
	if err != nil {
		return nil, err
	}
	return appendBytesField(nil, num, b), nil
}

// protoWatchFrame is one watch frame: the length, then the WatchEvent
// whose object is obj (an enveloped body).
func protoWatchFrame(typ wire.EventType, obj []byte) []byte {
	ext := appendBytesField(nil, 1, obj)
	n := fieldLen(len(typ)) + fieldLen(len(ext))
	b := make([]byte, 4, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	b = appendBytesField(b, 1, []byte(typ))
	return appendBytesField(b, 2, ext)
}

// appendProtoEventFrame appends to b the watch frame of an event of type
// typ whose object is raw, enveloped as apiVersion and kind: what
// protoWatchFrame(typ, envelope(apiVersion, kind, raw)) returns, written
// once into b instead of copied twice.
func appendProtoEventFrame(b []byte, typ wire.EventType, apiVersion, kind string, raw []byte) []byte {
	envLen := envelopeLen(apiVersion, kind, len(raw))
	b = binary.BigEndian.AppendUint32(b, uint32(fieldLen(len(typ))+fieldLen(fieldLen(envLen))))
	b = appendVarint(b, 1<<3|2)
	b = appendVarint(b, uint64(len(typ)))
	b = append(b, typ...)
	b = appendVarint(b, 2<<3|2) // WatchEvent.object, a RawExtension
	b = appendVarint(b, uint64(fieldLen(envLen)))
	b = appendVarint(b, 1<<3|2) // RawExtension.raw, the envelope
	b = appendVarint(b, uint64(envLen))
	b = appendEnvelopeHead(b, apiVersion, kind, len(raw))
	b = append(b, raw...)
	return append(b, envelopeTail...)
}

// protoEventFrameLen is the length of appendProtoEventFrame's frame.
func protoEventFrameLen(typ wire.EventType, apiVersion, kind string, rawLen int) int {
	return 4 + fieldLen(len(typ)) + fieldLen(fieldLen(envelopeLen(apiVersion, kind, rawLen)))
}

// protoStatus is st as kube's protobuf Status body.
func protoStatus(st *wire.Status) ([]byte, error) {
	j, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	raw, err := jsonToProto(j, &metav1.Status{})
	if err != nil {
		return nil, err
	}
	return envelope("v1", "Status", raw), nil
}

// protoBookmark is the enveloped bookmark object of r, or the
// PartialObjectMetadata of partial's apiVersion (when not ""): only its
// resourceVersion, and the initial-events-end annotation when it ends the
// initial events.
func protoBookmark(r *resource, rv string, end bool, partial string) ([]byte, error) {
	meta := metav1.ObjectMeta{ResourceVersion: rv}
	if end {
		meta.Annotations = map[string]string{wire.AnnotationInitialEventsEnd: "true"}
	}
	var obj runtime.Object = &metav1.PartialObjectMetadata{}
	apiVersion, kind := partial, "PartialObjectMetadata"
	if partial == "" {
		gvk, ok := protoGVK(r)
		if !ok {
			return nil, fmt.Errorf("no protobuf encoding for %v", gvk)
		}
		o, err := protobufScheme.New(gvk)
		if err != nil {
			return nil, err
		}
		obj, apiVersion, kind = o, r.apiVersion(), r.kind
	}
	acc, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	*acc.GetObjectMeta().(*metav1.ObjectMeta) = meta
	raw, err := obj.(protoMarshaler).Marshal()
	if err != nil {
		return nil, err
	}
	return envelope(apiVersion, kind, raw), nil
}
