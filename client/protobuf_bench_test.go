package client

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restwatch "k8s.io/client-go/rest/watch"

	"github.com/listwatch/listwatch/wire"
)

// Decode-only benchmarks of a benchItems-pod list page and of benchItems
// watch frames, from bytes in memory: our protobuf reader, our JSON path,
// and client-go's protobuf decode (its typed clients' decoder).

func benchPayloads(b *testing.B) (protoList, jsonList, protoWatch, jsonWatch []byte) {
	pl := &corev1.PodList{}
	jl := wire.List[*corev1.Pod]{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
	pl.ResourceVersion, jl.Metadata.ResourceVersion = "2000", "2000"
	var pw, jw bytes.Buffer
	for i := range benchItems {
		p := benchPod(i)
		pl.Items = append(pl.Items, *p)
		jl.Items = append(jl.Items, p)
		pw.Write(kubeFrame(b, watch.Modified, p))
		line, _ := json.Marshal(wire.Event[*corev1.Pod]{Type: wire.Modified, Object: p})
		jw.Write(line)
		jw.WriteByte('\n')
	}
	jb, _ := json.Marshal(jl)
	return kubeEncode(b, pl), jb, pw.Bytes(), jw.Bytes()
}

// clientGoDecoder is the decoder client-go's clientset uses for protobuf
// answers of core/v1.
func clientGoDecoder() runtime.Decoder {
	return scheme.Codecs.WithoutConversion().DecoderToVersion(kubeProto.Serializer, corev1.SchemeGroupVersion)
}

func BenchmarkDecodePodList(b *testing.B) {
	pb, jb, _, _ := benchPayloads(b)
	b.Run("listwatch-protobuf", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(pb)))
		for b.Loop() {
			l, err := decodeProtobufListBody[*corev1.Pod](pb)
			if err != nil || len(l.Items) != benchItems {
				b.Fatal(err)
			}
		}
	})
	b.Run("listwatch-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(jb)))
		for b.Loop() {
			var l wire.List[*corev1.Pod]
			if err := json.NewDecoder(bytes.NewReader(jb)).Decode(&l); err != nil || len(l.Items) != benchItems {
				b.Fatal(err)
			}
		}
	})
	b.Run("client-go-protobuf", func(b *testing.B) {
		dec := clientGoDecoder()
		b.ReportAllocs()
		b.SetBytes(int64(len(pb)))
		for b.Loop() {
			var l corev1.PodList
			if _, _, err := dec.Decode(pb, nil, &l); err != nil || len(l.Items) != benchItems {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDecodePodWatch(b *testing.B) {
	_, _, pw, jw := benchPayloads(b)
	count := func(b *testing.B, next func() error) {
		n := 0
		for {
			err := next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != benchItems {
			b.Fatalf("%d events", n)
		}
	}
	b.Run("listwatch-protobuf", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(pw)))
		for b.Loop() {
			d := newProtobufWatchDecoder[*corev1.Pod](bytes.NewReader(pw))
			count(b, func() error { _, err := d.next(); return err })
		}
	})
	b.Run("listwatch-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(jw)))
		for b.Loop() {
			d := newWatchDecoder[*corev1.Pod](bytes.NewReader(jw))
			count(b, func() error { _, err := d.next(); return err })
		}
	})
	b.Run("client-go-protobuf", func(b *testing.B) {
		dec := clientGoDecoder()
		b.ReportAllocs()
		b.SetBytes(int64(len(pw)))
		for b.Loop() {
			fr := kubeProto.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(pw)))
			d := restwatch.NewDecoder(streaming.NewDecoder(fr, kubeProto.StreamSerializer.Serializer), dec)
			count(b, func() error { _, _, err := d.Decode(); return err })
		}
	})
}
