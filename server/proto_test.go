package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/trace"
	"github.com/listwatch/listwatch/wire"
)

// TestNegotiateAsKube: Accept headers as kube-apiserver's negotiation
// reads them (q order, wildcards, parameters), for a built-in kind and a
// custom resource.
func TestNegotiateAsKube(t *testing.T) {
	builtin := builtinResources()[1]
	cr := &resource{version: "v1", plural: "foos", kind: "Foo", group: "example.com", crd: "foos.example.com"}
	const pb, js = "application/vnd.kubernetes.protobuf", "application/json"
	cases := []struct {
		accept string
		r      *resource
		want   string // "json", "yaml", "proto", "table", "partial", "partial-proto" or "406"
	}{
		{"", builtin, "json"},
		{pb + "," + js, builtin, "proto"},
		{pb + ", " + js, cr, "json"},
		{pb, cr, "406"},
		{js + "," + pb, builtin, "json"},
		{js + ";q=0.5," + pb, builtin, "proto"},
		{pb + ";q=0," + js + ";q=0", builtin, "proto"}, // q=0 is no refusal in kube
		{"*/*", builtin, "json"},
		{"application/*", builtin, "json"},
		{"*/*;q=0.1," + pb, builtin, "proto"},
		{pb + ";stream=watch", builtin, "proto"},
		{js + ";stream=watch", cr, "json"},
		{"application/yaml", builtin, "yaml"},
		{"application/yaml;stream=watch", builtin, "406"}, // kube has no YAML stream serializer
		{"application/yaml;stream=watch", cr, "406"},
		{"application/yaml;stream=watch, " + js + ";q=0.5", builtin, "json"},
		{"application/yaml;stream=", builtin, "yaml"}, // an empty stream is none
		{pb + ";stream=other," + js, builtin, "json"},
		{pb + ";as=Table;v=v1;g=meta.k8s.io," + js, builtin, "json"},
		{tableAccept, builtin, "table"},
		{pb + ";as=PartialObjectMetadataList;v=v1;g=meta.k8s.io," + js, builtin, "partial-proto"},
		{pb + ";as=PartialObjectMetadata;v=v1;g=meta.k8s.io," + js, cr, "partial-proto"},
		{js + ";as=Foo;v=v1;g=meta.k8s.io", builtin, "406"},
		{"text/plain", builtin, "406"},
		{"application/JSON", builtin, "406"}, // case-sensitive, as kube
		{"application", builtin, "406"},
		{pb + ";charset=utf-8", builtin, "proto"},
	}
	for _, tc := range cases {
		out, err := negotiate(tc.accept, tc.r)
		got := "json"
		switch {
		case err != nil:
			got = "406"
		case out.form == formTable:
			got = "table"
		case out.form == formPartial && out.proto:
			got = "partial-proto"
		case out.form == formPartial:
			got = "partial"
		case out.proto:
			got = "proto"
		case out.yaml:
			got = "yaml"
		}
		if got != tc.want {
			t.Errorf("negotiate(%q, %s) = %s, want %s", tc.accept, tc.r.plural, got, tc.want)
		}
	}
	// A custom resource's Status is protobuf too (kube-apiserver v1.37).
	for accept, want := range map[string]string{
		pb + "," + js: pb, pb + ";as=Table;v=v1;g=meta.k8s.io," + js: js, pb: pb, js + "," + pb: js,
		// YAML as kube: in its place, never with a conversion.
		"application/yaml": contentYAML, "application/yaml;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1": js,
		"application/yaml;as=Table;g=meta.k8s.io;v=v1, " + pb: pb, "text/html": js,
		"application/yaml;stream=watch": js, "application/yaml;stream=watch, " + pb: pb,
	} {
		if got := errorMedia(accept); got != want {
			t.Errorf("errorMedia(%q) = %s, want %s", accept, got, want)
		}
	}
}

var testCodec = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

func encodeKube(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := testCodec.Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const testCM = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7",` +
	`"labels":{"b":"2","a":"1"},"creationTimestamp":"2026-01-02T03:04:05Z"},"data":{"z":"1","k":"v"},"binaryData":{"b":"AAEC"}}`

// TestProtoBytesAsKube: an object, a Status and a bookmark in protobuf are
// the bytes apimachinery's serializer writes for them.
func TestProtoBytesAsKube(t *testing.T) {
	r := builtinResources()[1]
	raw, err := protoItem(r, []byte(testCM))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := runtime.DecodeInto(scheme.Codecs.UniversalDecoder(corev1.SchemeGroupVersion), []byte(testCM), &cm); err != nil {
		t.Fatal(err)
	}
	cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	if got, want := envelope("v1", "ConfigMap", raw), encodeKube(t, &cm); !bytes.Equal(got, want) {
		t.Fatalf("object\n got %q\nwant %q", got, want)
	}

	st := wire.NewConflict(wire.GroupResource{Resource: "configmaps"}, "a", wire.ConflictModified)
	got, err := protoStatus(st)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := testCodec.Decode(got, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ks := obj.(*metav1.Status)
	if ks.Code != 409 || ks.Reason != metav1.StatusReasonConflict || ks.Message != st.Message || ks.Details.Name != "a" || ks.Kind != "Status" || ks.APIVersion != "v1" {
		t.Fatalf("status %+v", ks)
	}
	ks.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	if want := encodeKube(t, ks); !bytes.Equal(got, want) {
		t.Fatalf("status\n got %q\nwant %q", got, want)
	}

	bm, err := protoBookmark(r, "42", true, "")
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err = testCodec.Decode(bm, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := obj.(*corev1.ConfigMap); b.ResourceVersion != "42" || b.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("bookmark %+v", b.ObjectMeta)
	}
}

// protoWriter is an eventWriter on a recorder, for a watch asking protobuf.
func protoWriter(t testing.TB, r *resource) (*eventWriter, *httptest.ResponseRecorder) {
	rec := httptest.NewRecorder()
	c := &call{s: &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}, w: rec,
		r: httptest.NewRequest("GET", "/", nil), res: r, tr: trace.New("test")}
	ew := &eventWriter{call: c, out: output{proto: true}, allowBookmarks: true,
		dog: newWriteWatchdog(http.NewResponseController(rec).SetWriteDeadline, time.Minute, time.Now().Add(time.Minute))}
	ew.flusher = rec
	t.Cleanup(ew.dog.stop)
	return ew, rec
}

// TestProtoWatchFrames: frames decode as client-go decodes a protobuf
// watch (length-delimited frames, WatchEvent without envelope, the object
// in its envelope), and a change's frame is built once per event: a
// second watcher sends the memoized bytes.
func TestProtoWatchFrames(t *testing.T) {
	r := builtinResources()[1]
	ev := storage.WatchEvent{Type: wire.Modified, Object: []byte(testCM), Revision: 7,
		ObjectAlt: &storage.Memo{}, FrameAlt: &storage.Memo{}}
	ew1, rec1 := protoWriter(t, r)
	ew1.write(ev)
	ew1.write(storage.WatchEvent{Type: wire.Bookmark, Revision: 9, InitialEventsEnd: true})
	ew1.writeError(wire.NewResourceExpired("too old resource version: 1 (5)"))

	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	dec := streaming.NewDecoder(info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(rec1.Body.Bytes()))),
		info.StreamSerializer.Serializer)
	type got struct {
		typ string
		obj runtime.Object
	}
	var events []got
	for {
		var we metav1.WatchEvent
		if _, _, err := dec.Decode(nil, &we); err != nil {
			if err != io.EOF {
				t.Fatalf("frame %d: %v", len(events), err)
			}
			break
		}
		obj, _, err := testCodec.Decode(we.Object.Raw, nil, nil)
		if err != nil {
			t.Fatalf("object of frame %d: %v", len(events), err)
		}
		events = append(events, got{we.Type, obj})
	}
	if len(events) != 3 || events[0].typ != "MODIFIED" || events[1].typ != "BOOKMARK" || events[2].typ != "ERROR" {
		t.Fatalf("events %+v", events)
	}
	if cm := events[0].obj.(*corev1.ConfigMap); cm.Name != "a" || cm.Data["k"] != "v" || cm.ResourceVersion != "7" {
		t.Fatalf("object %+v", cm)
	}
	if bm := events[1].obj.(*corev1.ConfigMap); bm.ResourceVersion != "9" {
		t.Fatalf("bookmark %+v", bm)
	}
	if st := events[2].obj.(*metav1.Status); st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("error %+v", st)
	}

	// Another watcher of the same event: the memo's bytes, not a
	// conversion (the object is garbage now).
	ew2, rec2 := protoWriter(t, r)
	ev.Object = []byte("not json")
	if !ew2.write(ev) {
		t.Fatal("second watcher's write failed")
	}
	first := rec1.Body.Bytes()
	if n := len(rec2.Body.Bytes()); n == 0 || !bytes.Equal(rec2.Body.Bytes(), first[:n]) {
		t.Fatalf("second watcher's frame differs:\n%q\n%q", rec2.Body.Bytes(), first)
	}
}

// TestProtoInitialEventFrames: an event no other watcher shares (an
// initial event, without FrameAlt) is framed in a pooled buffer: its
// bytes are those of the shared frame, event after event, while the
// buffer is reused.
func TestProtoInitialEventFrames(t *testing.T) {
	r := builtinResources()[1]
	objs := []string{testCM, strings.Replace(testCM, `"k":"v"`, `"k":"`+strings.Repeat("w", 300)+`"`, 1), testCM}
	shared, recShared := protoWriter(t, r)
	initial, recInitial := protoWriter(t, r)
	for i, o := range objs {
		ev := storage.WatchEvent{Type: wire.Added, Object: []byte(o), Revision: int64(7 + i), ObjectAlt: &storage.Memo{}}
		if !initial.write(ev) {
			t.Fatal("initial event's write failed")
		}
		ev.FrameAlt = &storage.Memo{}
		if !shared.write(ev) {
			t.Fatal("shared event's write failed")
		}
	}
	if !bytes.Equal(recInitial.Body.Bytes(), recShared.Body.Bytes()) {
		t.Fatalf("initial events' frames:\n%q\nshared frames:\n%q", recInitial.Body.Bytes(), recShared.Body.Bytes())
	}
	if n := bytes.Count(recInitial.Body.Bytes(), []byte(strings.Repeat("w", 300))); n != 1 {
		t.Fatalf("the long value is in %d frames, want 1", n)
	}
}

// FuzzProtoEventFrame: appendProtoEventFrame writes what the frame and
// envelope built apart give, for any type, apiVersion, kind and object
// (lengths across varints' byte boundaries), after any bytes already in
// the buffer.
func FuzzProtoEventFrame(f *testing.F) {
	f.Add("ADDED", "v1", "ConfigMap", []byte("x"), 0)
	f.Add("MODIFIED", "apps/v1", "Deployment", bytes.Repeat([]byte{0x80}, 127), 3)
	f.Add("DELETED", strings.Repeat("g", 200), "K", bytes.Repeat([]byte{1}, 16384), 0)
	f.Fuzz(func(t *testing.T, typ, apiVersion, kind string, raw []byte, pre int) {
		head := bytes.Repeat([]byte{0xaa}, pre&0xff)
		want := append(bytes.Clone(head), protoWatchFrame(wire.EventType(typ), envelope(apiVersion, kind, raw))...)
		if got := appendProtoEventFrame(bytes.Clone(head), wire.EventType(typ), apiVersion, kind, raw); !bytes.Equal(got, want) {
			t.Fatalf("appended:\n%x\nbuilt apart:\n%x", got, want)
		}
	})
}

// BenchmarkWatchInitialEvents: what writing a watch's initial events
// costs the server per event (a 6 KiB ConfigMap), in protobuf and JSON.
// Each is framed in a pooled buffer: no allocation per event.
func BenchmarkWatchInitialEvents(b *testing.B) {
	r := builtinResources()[1]
	obj := []byte(strings.Replace(testCM, `"k":"v"`, `"k":"`+strings.Repeat("v", 6<<10)+`"`, 1))
	for _, proto := range []bool{true, false} {
		b.Run(map[bool]string{true: "protobuf", false: "json"}[proto], func(b *testing.B) {
			ew, rec := protoWriter(b, r)
			ew.out.proto = proto
			memo := &storage.Memo{}
			b.ReportAllocs()
			b.SetBytes(int64(len(obj)))
			for b.Loop() {
				rec.Body.Reset()
				if !ew.write(storage.WatchEvent{Type: wire.Added, Object: obj, Revision: 7, ObjectAlt: memo}) {
					b.Fatal("write failed")
				}
			}
		})
	}
}

// TestProtoListMemo: a list page's items come from their memo when the
// page has one.
func TestProtoListMemo(t *testing.T) {
	r := builtinResources()[1]
	r.listKind = "ConfigMapList"
	items := []storage.KV{{Key: "/registry/configmaps/ns/a", Value: []byte(testCM), Revision: 7, Alt: &storage.Memo{}}}
	list := func() []byte {
		ew, rec := protoWriter(t, r)
		if err := ew.call.protoList(output{proto: true}, wire.ListMeta{ResourceVersion: "8"}, storage.ListPage{Items: items}); err != nil {
			t.Fatal(err)
		}
		return rec.Body.Bytes()
	}
	first := list()
	obj, _, err := testCodec.Decode(first, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := obj.(*corev1.ConfigMapList); l.ResourceVersion != "8" || len(l.Items) != 1 || l.Items[0].Name != "a" {
		t.Fatalf("list %+v", l)
	}
	items[0].Value = []byte("not json")
	if second := list(); !bytes.Equal(first, second) {
		t.Fatal("second page was converted again")
	}
}
