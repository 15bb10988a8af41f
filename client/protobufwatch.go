package client

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// maxWatchFrame caps one protobuf watch frame. kube-apiserver's objects
// are bounded by etcd's request limit (1.5 MiB by default), far below it;
// a larger length is a broken stream, not a reason to allocate.
const maxWatchFrame = 64 << 20

// eventDecoder reads a watch stream one event at a time: the JSON
// watchDecoder or the protobuf one.
type eventDecoder[T object.Object] interface {
	next() (wire.Event[T], error)
}

// newEventDecoder picks the decoder for resp by its Content-Type.
func (r *Resource[T]) newEventDecoder(resp *http.Response) eventDecoder[T] {
	if r.proto != nil && isProtobufResponse(resp.Header) {
		r.proto.serverSpeaks.Store(true)
		return newProtobufWatchDecoder[T](resp.Body)
	}
	return newWatchDecoder[T](resp.Body)
}

// protobufWatchDecoder reads a protobuf watch stream: frames of a 4-byte
// big-endian length and a meta/v1 WatchEvent whose object is an enveloped
// T (a Status for ERROR events). A frame split over many reads decodes the
// same as one read whole.
//
// The first error is sticky, as in watchDecoder.
type protobufWatchDecoder[T object.Object] struct {
	r   io.Reader
	buf bytes.Buffer // the current frame; reused, T's Unmarshal copies
	err error
}

func newProtobufWatchDecoder[T object.Object](r io.Reader) *protobufWatchDecoder[T] {
	return &protobufWatchDecoder[T]{r: r}
}

// next returns the next event, io.EOF at a clean end of stream (between
// frames), io.ErrUnexpectedEOF inside one, a *wire.Status for an ERROR
// event, and an ErrBadEvent otherwise.
func (d *protobufWatchDecoder[T]) next() (wire.Event[T], error) {
	if d.err != nil {
		return wire.Event[T]{}, d.err
	}
	ev, err := d.decode()
	if err != nil {
		d.err = err
	}
	return ev, err
}

func (d *protobufWatchDecoder[T]) decode() (wire.Event[T], error) {
	frame, err := d.readFrame()
	if err != nil {
		return wire.Event[T]{}, err
	}
	typ, obj, err := wire.DecodeProtobufWatchEvent(frame)
	if err != nil {
		return wire.Event[T]{}, fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	switch typ {
	case wire.Added, wire.Modified, wire.Deleted, wire.Bookmark:
	case wire.Error:
		return wire.Event[T]{}, protobufErrorEvent(obj)
	default:
		return wire.Event[T]{}, fmt.Errorf("%w: unknown type %q", ErrBadEvent, typ)
	}
	if len(obj) == 0 {
		return wire.Event[T]{}, fmt.Errorf("%w: %s event has no object", ErrBadEvent, typ)
	}
	o, err := unmarshalObject[T](obj)
	if err != nil {
		return wire.Event[T]{}, fmt.Errorf("%w: %s object: %w", ErrBadEvent, typ, err)
	}
	return wire.Event[T]{Type: typ, Object: o}, nil
}

// keepWatchBuffer is the most room a watch decoder keeps between frames.
const keepWatchBuffer = 1 << 20

// readFrame reads one length-prefixed frame into d.buf. The buffer grows
// with the bytes that arrive, not with the length the frame claims.
func (d *protobufWatchDecoder[T]) readFrame() ([]byte, error) {
	var hdr [4]byte
	if n, err := io.ReadFull(d.r, hdr[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > maxWatchFrame {
		return nil, fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrBadEvent, size, maxWatchFrame)
	}
	if d.buf.Cap() > keepWatchBuffer {
		// One large object (a ConfigMap near the 3 MiB limit, say) does
		// not pin its frame's room for the rest of a watch of small ones.
		d.buf = bytes.Buffer{}
	}
	d.buf.Reset()
	n, err := io.CopyN(&d.buf, d.r, int64(size))
	if err != nil {
		if errors.Is(err, io.EOF) && n < int64(size) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return d.buf.Bytes(), nil
}

// protobufErrorEvent turns an ERROR event's object into the error Next
// returns: its Status, or an InternalError when it is not one.
func protobufErrorEvent(obj []byte) error {
	st, err := wire.DecodeProtobufStatus(obj)
	if err != nil {
		return &wire.Status{
			TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status:   wire.StatusFailure,
			Reason:   wire.ReasonInternalError,
			Code:     500,
			Message:  fmt.Sprintf("watch ERROR event with an object that is not a Status: %v", err),
		}
	}
	return st
}
