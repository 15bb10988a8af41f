package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// The tests against k8s.io/apimachinery's protobuf serializer (what
// kube-apiserver sends, and what client-go reads) are in the server
// module, under server/compat/client; these use testPod, whose protobuf
// is core/v1's for the fields it has, and frames built by hand. The seed
// corpus of FuzzProtobufWatchDecoder holds frames kube's encoder wrote.

// protoPod is benchPod(i) in namespace ns, without TypeMeta, as a
// server stores it.
func protoPod(i int) *testPod {
	p := benchPod(i)
	p.TypeMeta = wire.TypeMeta{}
	p.Namespace = "ns"
	return p
}

func TestProtobufFallbackAndOptOut(t *testing.T) {
	ctx := ctxT(t)
	// A server that answers JSON to client-go's Accept (listwatch serve,
	// or kube for a custom resource): a type with protobuf methods still
	// decodes.
	api := newFakeAPI()
	srv := startTLS(t, api)
	c := newTestClient(t, srv, nil)
	jp := NewResource[*testPod](c, pods).Namespace("ns1")
	created, err := jp.Create(ctx, &testPod{ObjectMeta: ObjectMeta{Name: "a"}})
	if err != nil || created.Name != "a" || created.ResourceVersion == "" {
		t.Fatalf("create over JSON: %v %+v", err, created)
	}
	if got, err := jp.Get(ctx, "a"); err != nil || got.UID != "uid-a" {
		t.Fatalf("get over JSON: %v", err)
	}
	if l, err := jp.List(ctx, wire.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Fatalf("list over JSON: %v", err)
	}
	if _, err := jp.Get(ctx, "nope"); !IsNotFound(err) {
		t.Fatalf("JSON 404: %v", err)
	}
	for _, req := range api.seen() {
		if a := req.header.Get("Accept"); a != acceptProtobuf {
			t.Fatalf("%s: Accept %q", req.method, a)
		}
		if ct := req.header.Get("Content-Type"); req.body != nil && len(req.body) > 0 && ct != "application/json" {
			t.Fatalf("%s sent %q to a JSON server", req.method, ct)
		}
	}

	// Types without protobuf methods, DisableProtobuf and JSONOnly ask
	// for JSON.
	p0 := protoPod(0)
	p0.ResourceVersion = ""
	if _, err := NewResource[*testPod](c, pods).Create(ctx, p0); err != nil {
		t.Fatal(err)
	}
	f, psrv := api, srv
	for name, r := range map[string]interface {
		Get(ctx context.Context, n string) (object.Object, error)
	}{
		"unstructured":    getter[*object.Unstructured]{NewResource[*object.Unstructured](newTestClient(t, psrv, nil), pods).Namespace("ns")},
		"DisableProtobuf": getter[*testPod]{NewResource[*testPod](newTestClient(t, psrv, func(c *Config) { c.DisableProtobuf = true }), pods).Namespace("ns")},
		"JSONOnly":        getter[*testPod]{NewResource[*testPod](newTestClient(t, psrv, nil), pods).Namespace("ns").JSONOnly()},
	} {
		n := len(f.seen())
		obj, err := r.Get(ctx, "pod-0000")
		if err != nil || obj.GetName() != "pod-0000" {
			t.Fatalf("%s: %v", name, err)
		}
		if a := f.seen()[n].header.Get("Accept"); a != "application/json" {
			t.Fatalf("%s: Accept %q", name, a)
		}
	}
}

// getter adapts a Resource[T] to one interface for the table above.
type getter[T object.Object] struct{ r *Resource[T] }

func (g getter[T]) Get(ctx context.Context, n string) (object.Object, error) { return g.r.Get(ctx, n) }

// decodeAllProto runs the protobuf watch decoder to its first error and
// returns the events, as JSON, and that error.
func decodeAllProto(r io.Reader) ([]string, error) {
	d := newProtobufWatchDecoder[*testPod](r)
	var out []string
	for {
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

func TestProtobufWatchDecoderFraming(t *testing.T) {
	a := podFrame(wire.Added, protoPod(0))
	m := podFrame(wire.Modified, protoPod(1))
	evs, err := decodeAllProto(bytes.NewReader(append(append([]byte{}, a...), m...)))
	if err != io.EOF || len(evs) != 2 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	if _, err := decodeAllProto(bytes.NewReader(a[:2])); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut in the length: %v", err)
	}
	if _, err := decodeAllProto(bytes.NewReader(a[:40])); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut in the frame: %v", err)
	}
	boom := errors.New("boom")
	if _, err := decodeAllProto(io.MultiReader(bytes.NewReader(a), iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Fatalf("transport error: %v", err)
	}
	if _, err := decodeAllProto(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff})); !errors.Is(err, ErrBadEvent) {
		t.Fatalf("huge frame: %v", err)
	}
	// An ERROR whose object is not a Status still ends the stream with one.
	if _, err := decodeAllProto(bytes.NewReader(podFrame(wire.Error, protoPod(0)))); wire.CodeOf(err) != 500 {
		t.Fatalf("ERROR without Status: %v", err)
	}
}

func FuzzProtobufWatchDecoder(f *testing.F) {
	// Frames of kube's own encoder are in testdata/fuzz.
	a := podFrame(wire.Added, protoPod(0))
	b := podFrame(wire.Bookmark, &testPod{ObjectMeta: ObjectMeta{ResourceVersion: "9",
		Annotations: map[string]string{wire.AnnotationInitialEventsEnd: "true"}}})
	e := statusFrame(wire.NewResourceExpired("old"))
	for _, s := range [][]byte{
		append(append(append([]byte{}, a...), b...), e...), a[:30], b, e, {0, 0, 0, 0}, {0, 0, 0, 2, 8, 1}, {}, {0xff},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, errWhole := decodeAllProto(bytes.NewReader(data))
		bytewise, errBytewise := decodeAllProto(iotest.OneByteReader(bytes.NewReader(data)))
		if strings.Join(whole, "\n") != strings.Join(bytewise, "\n") || errString(errWhole) != errString(errBytewise) {
			t.Fatalf("whole read: %v / %v; one byte at a time: %v / %v", whole, errWhole, bytewise, errBytewise)
		}
		_, isStatus := statusOf(errWhole)
		if !(errWhole == io.EOF || errWhole == io.ErrUnexpectedEOF || isStatus || errors.Is(errWhole, ErrBadEvent)) {
			t.Fatalf("undocumented error %T %v", errWhole, errWhole)
		}
		for _, s := range whole {
			var ev wire.Event[*testPod]
			if err := json.Unmarshal([]byte(s), &ev); err != nil || ev.Object == nil {
				t.Fatalf("event %s: %v", s, err)
			}
			switch ev.Type {
			case wire.Added, wire.Modified, wire.Deleted, wire.Bookmark:
			default:
				t.Fatalf("event type %q passed through", ev.Type)
			}
		}
	})
}

func TestProtobufErrorBodyNotAStatus(t *testing.T) {
	resp := &http.Response{StatusCode: 503, Header: http.Header{"Content-Type": {wire.ContentTypeProtobuf}, "Retry-After": {"2"}},
		Body: io.NopCloser(bytes.NewReader([]byte("k8s\x00\x0a\xff")))}
	st := statusError(resp)
	if st.Reason != wire.ReasonServiceUnavailable || st.Code != 503 || st.Message != "the server is currently unable to handle the request" ||
		st.Details == nil || st.Details.RetryAfterSeconds != 2 {
		t.Fatalf("%+v", st)
	}
}

// TestProtobufWatchDecoderDropsLargeBuffer: after a frame larger than
// keepWatchBuffer, the next frame does not keep its room.
func TestProtobufWatchDecoderDropsLargeBuffer(t *testing.T) {
	big := protoPod(0)
	big.Annotations = map[string]string{"big": strings.Repeat("x", 2*keepWatchBuffer)}
	var stream []byte
	stream = append(stream, podFrame(wire.Added, big)...)
	stream = append(stream, podFrame(wire.Modified, protoPod(1))...)
	d := newProtobufWatchDecoder[*testPod](bytes.NewReader(stream))
	ev, err := d.next()
	if err != nil || len(ev.Object.Annotations["big"]) != 2*keepWatchBuffer {
		t.Fatalf("large frame: %v", err)
	}
	if d.buf.Cap() <= keepWatchBuffer {
		t.Fatalf("buffer of %d bytes after a frame over %d", d.buf.Cap(), 2*keepWatchBuffer)
	}
	if ev, err = d.next(); err != nil || ev.Object.Name != protoPod(1).Name {
		t.Fatalf("small frame: %v", err)
	}
	if d.buf.Cap() > keepWatchBuffer {
		t.Fatalf("buffer of %d bytes kept after a small frame", d.buf.Cap())
	}
}
