package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// decodeAll runs the decoder to its first error and returns the events
// (re-encoded, so they compare as text) and that error.
func decodeAll(r io.Reader) ([]string, error) {
	d := newWatchDecoder[*object.Unstructured](r)
	var out []string
	for i := 0; ; i++ {
		ev, err := d.next()
		if err != nil {
			return out, err
		}
		b, merr := json.Marshal(ev)
		if merr != nil {
			return out, merr
		}
		out = append(out, string(b))
	}
}

func TestWatchDecoderFraming(t *testing.T) {
	// Newline-framed, concatenated with no separator, and with extra
	// whitespace: all the same stream.
	for _, stream := range []string{
		evAdded + "\n" + evModified + "\n",
		evAdded + evModified,
		"\n  " + evAdded + "\r\n\t" + evModified + "  ",
	} {
		evs, err := decodeAll(strings.NewReader(stream))
		if err != io.EOF || len(evs) != 2 {
			t.Fatalf("%q: %d events, %v", stream, len(evs), err)
		}
	}
	// Cut mid-event: not a clean end.
	if _, err := decodeAll(strings.NewReader(evAdded[:40])); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated: %v, want io.ErrUnexpectedEOF", err)
	}
	// A transport error passes through unwrapped.
	boom := errors.New("boom")
	if _, err := decodeAll(io.MultiReader(strings.NewReader(evAdded), iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Fatalf("transport error: %v", err)
	}
	// An ERROR whose object is not a Status still ends the stream with a Status.
	_, err := decodeAll(strings.NewReader(`{"type":"ERROR","object":{"kind":"Pod"}}`))
	if st, ok := statusOf(err); !ok || st.Code != 500 {
		t.Fatalf("ERROR without Status: %v", err)
	}
}

func FuzzWatchDecoder(f *testing.F) {
	for _, s := range []string{
		evAdded + "\n" + evModified + "\n" + evBookmark + "\n" + evDeleted + "\n",
		evAdded + evExpired,
		evAdded[:33],
		`{"type":"ADDED","object":null}`,
		`{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Gone"}}`,
		`{"type":"ERROR","object":"x"}`,
		`{"type":"MODIFIED","object":{"metadata":{"resourceVersion":7}}}`,
		`[]`, `"x"`, `{}`, ``, "\n\n", `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1"}}}{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, errWhole := decodeAll(bytes.NewReader(data))
		// Property 1: read one byte at a time (the partial reads of a slow
		// stream), the decoder yields exactly the same events and error.
		bytewise, errBytewise := decodeAll(iotest.OneByteReader(bytes.NewReader(data)))
		if strings.Join(whole, "\n") != strings.Join(bytewise, "\n") || errString(errWhole) != errString(errBytewise) {
			t.Fatalf("whole read: %v / %v; one byte at a time: %v / %v", whole, errWhole, bytewise, errBytewise)
		}
		// Property 2: the stream always ends in one of the documented errors.
		_, isStatus := statusOf(errWhole)
		if !(errWhole == io.EOF || errWhole == io.ErrUnexpectedEOF || isStatus || errors.Is(errWhole, ErrBadEvent)) {
			t.Fatalf("undocumented error %T %v", errWhole, errWhole)
		}
		// Property 3: every event has a known non-ERROR type and an object,
		// and decoding it again gives the same event.
		for _, s := range whole {
			var ev wire.Event[*object.Unstructured]
			if err := json.Unmarshal([]byte(s), &ev); err != nil || ev.Object == nil {
				t.Fatalf("event %s does not decode again: %v", s, err)
			}
			switch ev.Type {
			case wire.Added, wire.Modified, wire.Deleted, wire.Bookmark:
			default:
				t.Fatalf("event type %q passed through", ev.Type)
			}
			again, _ := json.Marshal(ev)
			if string(again) != s {
				t.Fatalf("re-encoding changed the event: %s vs %s", again, s)
			}
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
