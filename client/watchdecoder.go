package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// ErrBadEvent is wrapped by errors about a watch event that is not
// well-formed: bad JSON, an unknown type, an object that does not decode.
var ErrBadEvent = errors.New("client: malformed watch event")

// watchDecoder reads a watch stream: JSON events one after another,
// usually one per line, though any whitespace (or none) between them is
// accepted. It reads through a json.Decoder, which buffers partial reads,
// so an event split over many TCP reads (or one byte per read) decodes the
// same as one read whole.
//
// The first error is sticky: once the stream is broken or has ended,
// every later call returns the same error.
type watchDecoder[T object.Object] struct {
	dec *json.Decoder
	err error
}

func newWatchDecoder[T object.Object](r io.Reader) *watchDecoder[T] {
	return &watchDecoder[T]{dec: json.NewDecoder(r)}
}

// rawEvent defers decoding the object until the type is known: an ERROR
// event's object is a Status, not a T.
type rawEvent struct {
	Type   wire.EventType  `json:"type"`
	Object json.RawMessage `json:"object"`
}

// next returns the next event, io.EOF at a clean end of stream (between
// events), io.ErrUnexpectedEOF inside one, a *wire.Status for an ERROR
// event, and an ErrBadEvent otherwise.
func (d *watchDecoder[T]) next() (wire.Event[T], error) {
	if d.err != nil {
		return wire.Event[T]{}, d.err
	}
	ev, err := d.decode()
	if err != nil {
		d.err = err
	}
	return ev, err
}

func (d *watchDecoder[T]) decode() (wire.Event[T], error) {
	var raw rawEvent
	if err := d.dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return wire.Event[T]{}, err
		}
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syn) || errors.As(err, &typ) {
			return wire.Event[T]{}, fmt.Errorf("%w: %w", ErrBadEvent, err)
		}
		return wire.Event[T]{}, err // the transport's error
	}
	switch raw.Type {
	case wire.Added, wire.Modified, wire.Deleted, wire.Bookmark:
	case wire.Error:
		return wire.Event[T]{}, decodeErrorEvent(raw.Object)
	default:
		return wire.Event[T]{}, fmt.Errorf("%w: unknown type %q", ErrBadEvent, raw.Type)
	}
	if len(raw.Object) == 0 || string(raw.Object) == "null" {
		return wire.Event[T]{}, fmt.Errorf("%w: %s event has no object", ErrBadEvent, raw.Type)
	}
	ev := wire.Event[T]{Type: raw.Type}
	if err := decodeValid(raw.Object, &ev.Object); err != nil {
		return wire.Event[T]{}, fmt.Errorf("%w: %s object: %w", ErrBadEvent, raw.Type, err)
	}
	return ev, nil
}

// decodeErrorEvent turns an ERROR event's object into the error Next
// returns. An object that is not a Status still ends the stream, as an
// InternalError carrying the raw text.
func decodeErrorEvent(obj json.RawMessage) error {
	var st wire.Status
	if err := json.Unmarshal(obj, &st); err != nil || st.Kind != "Status" {
		return &wire.Status{
			TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status:   wire.StatusFailure,
			Reason:   wire.ReasonInternalError,
			Code:     500,
			Message:  fmt.Sprintf("watch ERROR event with an object that is not a Status: %.200s", obj),
		}
	}
	return &st
}
