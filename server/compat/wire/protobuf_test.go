package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/listwatch/listwatch/wire"
)

// The peer is k8s.io/apimachinery's protobuf serializer, with a scheme of
// core/v1 and meta/v1 as kube-apiserver has.
var (
	kubeScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		if err := corev1.AddToScheme(s); err != nil {
			panic(err)
		}
		metav1.AddToGroupVersion(s, corev1.SchemeGroupVersion)
		return s
	}()
	kubeCodecs = serializer.NewCodecFactory(kubeScheme)
	kubeProto  = protobuf.NewSerializer(kubeScheme, kubeScheme)
)

func kubeEncode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	b, err := runtime.Encode(kubeCodecs.EncoderForVersion(kubeProto, corev1.SchemeGroupVersion), obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func kubePod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "5",
		Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{NodeName: "n"}}
}

func kubeStatus() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Message: `pods "x" is invalid`, Reason: metav1.StatusReasonInvalid, Code: 422,
		ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "c"},
		Details: &metav1.StatusDetails{Name: "x", Group: "g", Kind: "pods", UID: "u", RetryAfterSeconds: 3,
			Causes: []metav1.StatusCause{{Type: "FieldValueInvalid", Message: "bad", Field: "spec"}, {Message: "also"}}}}
}

func TestDecodeEnvelopeFromKube(t *testing.T) {
	p := kubePod("a")
	e, err := wire.DecodeEnvelope(kubeEncode(t, p))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := p.Marshal()
	if e.APIVersion != "v1" || e.Kind != "Pod" || !bytes.Equal(e.Raw, raw) {
		t.Fatalf("envelope %+v", e.TypeMeta)
	}
	// And ours decodes with kube's serializer.
	obj, gvk, err := kubeProto.Decode(wire.AppendEnvelope(nil, wire.TypeMeta{APIVersion: "v1", Kind: "Pod"}, raw), nil, nil)
	if err != nil || gvk.Kind != "Pod" || obj.(*corev1.Pod).Spec.NodeName != "n" {
		t.Fatalf("kube reads our envelope: %v %v", gvk, err)
	}
	for _, bad := range [][]byte{nil, []byte("k8s"), []byte("{}"), append([]byte("k8s\x00"), 0x12, 5)} {
		if _, err := wire.DecodeEnvelope(bad); !errors.Is(err, wire.ErrProtobuf) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func TestDecodeProtobufStatusFromKube(t *testing.T) {
	st := kubeStatus()
	got, err := wire.DecodeProtobufStatus(kubeEncode(t, st))
	if err != nil {
		t.Fatal(err)
	}
	// The same Status read from kube's JSON.
	js, _ := runtime.Encode(kubeCodecs.LegacyCodec(corev1.SchemeGroupVersion), st)
	var want wire.Status
	if err := json.Unmarshal(js, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("protobuf %+v\njson %+v", got, want)
	}
	if _, err := wire.DecodeProtobufStatus(kubeEncode(t, kubePod("a"))); !errors.Is(err, wire.ErrProtobuf) {
		t.Fatalf("a Pod as Status: %v", err)
	}
}

func TestDecodeProtobufListFromKube(t *testing.T) {
	rest := int64(7)
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10", Continue: "tok", RemainingItemCount: &rest},
		Items: []corev1.Pod{*kubePod("a"), *kubePod("b")}}
	e, err := wire.DecodeEnvelope(kubeEncode(t, l))
	if err != nil || e.Kind != "PodList" {
		t.Fatalf("%v %+v", err, e.TypeMeta)
	}
	var names []string
	lm, err := wire.DecodeProtobufList(e.Raw, func(b []byte) error {
		var p corev1.Pod
		if err := p.Unmarshal(b); err != nil {
			return err
		}
		names = append(names, p.Name)
		return nil
	})
	if err != nil || lm.ResourceVersion != "10" || lm.Continue != "tok" || *lm.RemainingItemCount != 7 || len(names) != 2 || names[1] != "b" {
		t.Fatalf("%v %+v %v", err, lm, names)
	}
	stop := errors.New("stop")
	if _, err := wire.DecodeProtobufList(e.Raw, func([]byte) error { return stop }); err != stop {
		t.Fatalf("item error: %v", err)
	}
}

func TestDecodeProtobufWatchEventFromKube(t *testing.T) {
	obj := kubeEncode(t, kubePod("a"))
	var frame bytes.Buffer
	// The stream serializer writes the event without an envelope.
	stream := protobuf.NewRawSerializer(kubeScheme, kubeScheme)
	if err := stream.Encode(&metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: obj}}, &frame); err != nil {
		t.Fatal(err)
	}
	if wire.IsProtobufEnvelope(frame.Bytes()) {
		t.Fatal("kube's watch event has an envelope; the decoder's comment is wrong")
	}
	typ, got, err := wire.DecodeProtobufWatchEvent(frame.Bytes())
	if err != nil || typ != wire.Added || !bytes.Equal(got, obj) {
		t.Fatalf("%v %q", err, typ)
	}
	// An enveloped event is read too.
	typ, got, err = wire.DecodeProtobufWatchEvent(wire.AppendEnvelope(nil, wire.TypeMeta{Kind: "WatchEvent", APIVersion: "v1"}, frame.Bytes()))
	if err != nil || typ != wire.Added || !bytes.Equal(got, obj) {
		t.Fatalf("enveloped: %v %q", err, typ)
	}
}

// FuzzDecodeProtobufStatus checks the Status reader against kube's
// generated one: whatever both read, they read the same.
func FuzzDecodeProtobufStatus(f *testing.F) {
	f.Add(kubeEncode(f, kubeStatus()))
	f.Add(kubeEncode(f, &metav1.Status{Code: -1}))
	f.Add(kubeEncode(f, kubePod("a")))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := wire.DecodeProtobufStatus(data)
		e, eerr := wire.DecodeEnvelope(data)
		var ks metav1.Status
		kerr := errors.New("not a Status envelope")
		if eerr == nil && e.Kind == "Status" {
			kerr = ks.Unmarshal(e.Raw)
		}
		if err != nil {
			if !errors.Is(err, wire.ErrProtobuf) {
				t.Fatalf("undocumented error %v", err)
			}
			// Ours may be stricter than kube's generated decoder on input
			// no encoder produces (over-long varints, end-group markers of
			// another field): a refusal is fine as long as it is ours.
			return
		}
		if kerr != nil {
			return // ours is laxer on some malformed input; not a crash
		}
		ks.TypeMeta = metav1.TypeMeta{APIVersion: e.APIVersion, Kind: e.Kind}
		js, _ := json.Marshal(&ks)
		var want wire.Status
		if err := json.Unmarshal(js, &want); err != nil {
			t.Fatal(err)
		}
		// Both through JSON, so invalid UTF-8 is replaced alike.
		a, _ := json.Marshal(got)
		var ours wire.Status
		_ = json.Unmarshal(a, &ours)
		a, _ = json.Marshal(&ours)
		b, _ := json.Marshal(&want)
		if !bytes.Equal(a, b) {
			t.Fatalf("ours %s\nkube %s", a, b)
		}
	})
}
