package wire

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ContentTypeProtobuf is Kubernetes' protobuf media type. A watch answered
// in it carries the parameter stream=watch.
const ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"

// ErrProtobuf is wrapped by every error about protobuf data that is not
// what Kubernetes' serializer writes: a missing magic prefix, a truncated
// or mistyped field, an envelope of another encoding.
var ErrProtobuf = errors.New("wire: malformed protobuf")

// protobufMagic starts every enveloped object Kubernetes' protobuf
// serializer writes.
var protobufMagic = []byte("k8s\x00")

// Envelope is runtime.Unknown, the wrapper of a protobuf-encoded object:
// its apiVersion and kind, and the object's own protobuf bytes in Raw.
type Envelope struct {
	TypeMeta
	Raw             []byte
	ContentEncoding string
	ContentType     string
}

// Field numbers, from k8s.io/apimachinery's generated.proto files.
const (
	// runtime.Unknown
	unknownTypeMeta        = 1
	unknownRaw             = 2
	unknownContentEncoding = 3
	unknownContentType     = 4
	// runtime.TypeMeta
	typeMetaAPIVersion = 1
	typeMetaKind       = 2
	// meta/v1 ListMeta; the items of every List kind are field 2.
	listMetaResourceVersion    = 2
	listMetaContinue           = 3
	listMetaRemainingItemCount = 4
	listMetadata               = 1
	listItems                  = 2
	// meta/v1 WatchEvent and runtime.RawExtension
	watchEventType   = 1
	watchEventObject = 2
	rawExtensionRaw  = 1
	// meta/v1 Status, StatusDetails, StatusCause
	statusMetadata    = 1
	statusStatus      = 2
	statusMessage     = 3
	statusReason      = 4
	statusDetails     = 5
	statusCode        = 6
	detailsName       = 1
	detailsGroup      = 2
	detailsKind       = 3
	detailsCauses     = 4
	detailsRetryAfter = 5
	detailsUID        = 6
	causeReason       = 1
	causeMessage      = 2
	causeField        = 3
)

// field is one decoded protobuf field: bytes for length-delimited ones,
// a number for varints.
type field struct {
	num    protowire.Number
	typ    protowire.Type
	bytes  []byte
	varint uint64
}

// eachField calls fn for every field of the message b, skipping fixed32,
// fixed64 and group fields (no field listwatch reads has those types).
func eachField(b []byte, fn func(field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", ErrProtobuf, protowire.ParseError(n))
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.BytesType:
			f.bytes, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			f.varint, n = protowire.ConsumeVarint(b)
		case protowire.StartGroupType:
			n = skipGroup(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %w", ErrProtobuf, num, protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType && typ != protowire.VarintType {
			continue
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// wantBytes and wantVarint reject a known field sent with another wire
// type, as the generated Unmarshal methods do.
func (f field) wantBytes() error {
	if f.typ != protowire.BytesType {
		return fmt.Errorf("%w: field %d has wire type %d, want bytes", ErrProtobuf, f.num, f.typ)
	}
	return nil
}

func (f field) wantVarint() error {
	if f.typ != protowire.VarintType {
		return fmt.Errorf("%w: field %d has wire type %d, want varint", ErrProtobuf, f.num, f.typ)
	}
	return nil
}

// stringField stores a bytes field into *dst.
func stringField(f field, dst *string) error {
	if err := f.wantBytes(); err != nil {
		return err
	}
	*dst = string(f.bytes)
	return nil
}

// IsProtobufEnvelope says whether data starts with the protobuf magic.
func IsProtobufEnvelope(data []byte) bool { return bytes.HasPrefix(data, protobufMagic) }

// DecodeEnvelope reads an enveloped object: the magic prefix, then a
// runtime.Unknown. Raw aliases data.
func DecodeEnvelope(data []byte) (Envelope, error) {
	var e Envelope
	if !IsProtobufEnvelope(data) {
		return e, fmt.Errorf("%w: no k8s protobuf prefix", ErrProtobuf)
	}
	err := eachField(data[len(protobufMagic):], func(f field) error {
		switch f.num {
		case unknownTypeMeta:
			if err := f.wantBytes(); err != nil {
				return err
			}
			return decodeTypeMeta(f.bytes, &e.TypeMeta)
		case unknownRaw:
			if err := f.wantBytes(); err != nil {
				return err
			}
			e.Raw = f.bytes
		case unknownContentEncoding:
			return stringField(f, &e.ContentEncoding)
		case unknownContentType:
			return stringField(f, &e.ContentType)
		}
		return nil
	})
	if err != nil {
		return Envelope{}, err
	}
	if e.ContentEncoding != "" {
		return Envelope{}, fmt.Errorf("%w: content encoding %q is not supported", ErrProtobuf, e.ContentEncoding)
	}
	if e.ContentType != "" && e.ContentType != ContentTypeProtobuf {
		return Envelope{}, fmt.Errorf("%w: envelope holds %q, not protobuf", ErrProtobuf, e.ContentType)
	}
	return e, nil
}

// decodeTypeMeta reads a runtime.TypeMeta into tm.
func decodeTypeMeta(b []byte, tm *TypeMeta) error {
	return eachField(b, func(f field) error {
		switch f.num {
		case typeMetaAPIVersion:
			return stringField(f, &tm.APIVersion)
		case typeMetaKind:
			return stringField(f, &tm.Kind)
		}
		return nil
	})
}

// AppendEnvelope appends the magic prefix and a runtime.Unknown holding tm
// and raw (an object's protobuf bytes) to b.
func AppendEnvelope(b []byte, tm TypeMeta, raw []byte) []byte {
	b = append(b, protobufMagic...)
	var t []byte
	t = appendString(t, typeMetaAPIVersion, tm.APIVersion)
	t = appendString(t, typeMetaKind, tm.Kind)
	b = protowire.AppendTag(b, unknownTypeMeta, protowire.BytesType)
	b = protowire.AppendBytes(b, t)
	b = protowire.AppendTag(b, unknownRaw, protowire.BytesType)
	b = protowire.AppendBytes(b, raw)
	// contentEncoding and contentType are written empty, as kube does.
	b = appendString(b, unknownContentEncoding, "")
	b = appendString(b, unknownContentType, "")
	return b
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// DecodeProtobufList reads the raw bytes of a List kind (PodList,
// ConfigMapList, ...): its ListMeta, and each item's protobuf bytes,
// passed to item in order. An error from item stops the decode and is
// returned as is.
func DecodeProtobufList(raw []byte, item func([]byte) error) (ListMeta, error) {
	var lm ListMeta
	err := eachField(raw, func(f field) error {
		switch f.num {
		case listMetadata:
			if err := f.wantBytes(); err != nil {
				return err
			}
			return decodeListMeta(f.bytes, &lm)
		case listItems:
			if err := f.wantBytes(); err != nil {
				return err
			}
			return item(f.bytes)
		}
		return nil
	})
	if err != nil {
		return ListMeta{}, err
	}
	return lm, nil
}

func decodeListMeta(b []byte, lm *ListMeta) error {
	return eachField(b, func(f field) error {
		switch f.num {
		case listMetaResourceVersion:
			return stringField(f, &lm.ResourceVersion)
		case listMetaContinue:
			return stringField(f, &lm.Continue)
		case listMetaRemainingItemCount:
			if err := f.wantVarint(); err != nil {
				return err
			}
			n := int64(f.varint)
			lm.RemainingItemCount = &n
		}
		return nil
	})
}

// DecodeProtobufWatchEvent reads one frame of a protobuf watch stream, a
// meta/v1 WatchEvent, and returns its type and its object's bytes (an
// enveloped object). kube-apiserver writes the event itself without an
// envelope; an enveloped event is accepted too.
func DecodeProtobufWatchEvent(frame []byte) (EventType, []byte, error) {
	if IsProtobufEnvelope(frame) {
		e, err := DecodeEnvelope(frame)
		if err != nil {
			return "", nil, err
		}
		frame = e.Raw
	}
	var typ string
	var obj []byte
	err := eachField(frame, func(f field) error {
		switch f.num {
		case watchEventType:
			return stringField(f, &typ)
		case watchEventObject:
			if err := f.wantBytes(); err != nil {
				return err
			}
			return eachField(f.bytes, func(f field) error {
				if f.num != rawExtensionRaw {
					return nil
				}
				if err := f.wantBytes(); err != nil {
					return err
				}
				obj = f.bytes
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return EventType(typ), obj, nil
}

// DecodeProtobufStatus reads a Status from its enveloped form. It fails
// unless the envelope's kind is Status.
func DecodeProtobufStatus(data []byte) (*Status, error) {
	e, err := DecodeEnvelope(data)
	if err != nil {
		return nil, err
	}
	if e.Kind != "Status" {
		return nil, fmt.Errorf("%w: kind %q is not Status", ErrProtobuf, e.Kind)
	}
	st := &Status{TypeMeta: e.TypeMeta}
	err = eachField(e.Raw, func(f field) error {
		switch f.num {
		case statusMetadata:
			if err := f.wantBytes(); err != nil {
				return err
			}
			return decodeListMeta(f.bytes, &st.Metadata)
		case statusStatus:
			return stringField(f, &st.Status)
		case statusMessage:
			return stringField(f, &st.Message)
		case statusReason:
			var r string
			err := stringField(f, &r)
			st.Reason = StatusReason(r)
			return err
		case statusDetails:
			if err := f.wantBytes(); err != nil {
				return err
			}
			if st.Details == nil { // a repeated message field merges
				st.Details = &StatusDetails{}
			}
			return decodeStatusDetails(f.bytes, st.Details)
		case statusCode:
			if err := f.wantVarint(); err != nil {
				return err
			}
			st.Code = int32(f.varint)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

func decodeStatusDetails(b []byte, d *StatusDetails) error {
	return eachField(b, func(f field) error {
		switch f.num {
		case detailsName:
			return stringField(f, &d.Name)
		case detailsGroup:
			return stringField(f, &d.Group)
		case detailsKind:
			return stringField(f, &d.Kind)
		case detailsUID:
			return stringField(f, &d.UID)
		case detailsRetryAfter:
			if err := f.wantVarint(); err != nil {
				return err
			}
			d.RetryAfterSeconds = int32(f.varint)
		case detailsCauses:
			if err := f.wantBytes(); err != nil {
				return err
			}
			var c StatusCause
			if err := eachField(f.bytes, func(f field) error {
				switch f.num {
				case causeReason:
					return stringField(f, &c.Type)
				case causeMessage:
					return stringField(f, &c.Message)
				case causeField:
					return stringField(f, &c.Field)
				}
				return nil
			}); err != nil {
				return err
			}
			d.Causes = append(d.Causes, c)
		}
		return nil
	})
}

// skipGroup skips the rest of a group whose start tag has been read, the
// way kube's generated decoders do: nested groups are counted, and an end
// marker closes the innermost open group whatever field number it names.
// It returns the bytes consumed or a negative protowire error code.
func skipGroup(b []byte) int {
	total, depth := 0, 1
	for depth > 0 {
		_, typ, n := protowire.ConsumeTag(b[total:])
		if n < 0 {
			return n
		}
		total += n
		switch typ {
		case protowire.StartGroupType:
			depth++
			continue
		case protowire.EndGroupType:
			depth--
			continue
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(b[total:])
		case protowire.Fixed32Type:
			_, n = protowire.ConsumeFixed32(b[total:])
		case protowire.Fixed64Type:
			_, n = protowire.ConsumeFixed64(b[total:])
		case protowire.BytesType:
			_, n = protowire.ConsumeBytes(b[total:])
		default:
			return -1
		}
		if n < 0 {
			return n
		}
		total += n
	}
	return total
}
