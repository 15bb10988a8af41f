package client_test

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

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/bench"
	"github.com/listwatch/listwatch/wire"
)

// Decode benchmarks of a benchItems-pod list page and of benchItems watch
// frames, from bytes in memory: our client in protobuf and in JSON, and
// client-go's protobuf decode (its typed clients' decoder). Ours go
// through the client's public List and Watch with a transport that
// answers from memory (memTransport), so they include building the
// request, a few microseconds against the decoding of 500 pods.

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

// memPods is a Resource of pods whose list and watch answers are
// list and watch, protobuf or JSON.
func memPods(b *testing.B, protobuf bool, list, watch []byte) *client.Resource[*corev1.Pod] {
	m := &memTransport{listType: "application/json", watchType: "application/json", list: list, watch: watch}
	if protobuf {
		m.listType, m.watchType = wire.ContentTypeProtobuf, wire.ContentTypeProtobuf+";stream=watch"
	}
	r := client.NewResource[*corev1.Pod](memClient(b, m), pods).Namespace("bench")
	if !protobuf {
		r = r.JSONOnly()
	}
	return r
}

func BenchmarkDecodePodList(b *testing.B) {
	pb, jb, _, _ := benchPayloads(b)
	for _, c := range []struct {
		name     string
		protobuf bool
		body     []byte
	}{{"listwatch-protobuf", true, pb}, {"listwatch-json", false, jb}} {
		b.Run(c.name, func(b *testing.B) { benchOurList(b, c.protobuf, c.body) })
	}
	b.Run("client-go-protobuf", func(b *testing.B) { benchClientGoList(b, pb) })
}

// benchOurList decodes body, a page of benchItems pods, with our
// client's List, protobuf or JSON.
func benchOurList(b *testing.B, protobuf bool, body []byte) {
	ctx := ctxT(b)
	r := memPods(b, protobuf, body, nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		l, err := r.List(ctx, wire.ListOptions{})
		if err != nil || len(l.Items) != benchItems {
			b.Fatal(err)
		}
	}
}

// benchClientGoList decodes pb, a protobuf page of benchItems pods, with
// client-go's decoder.
func benchClientGoList(b *testing.B, pb []byte) {
	dec := clientGoDecoder()
	b.ReportAllocs()
	b.SetBytes(int64(len(pb)))
	for b.Loop() {
		var l corev1.PodList
		if _, _, err := dec.Decode(pb, nil, &l); err != nil || len(l.Items) != benchItems {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePodWatch(b *testing.B) {
	_, _, pw, jw := benchPayloads(b)
	ctx := ctxT(b)
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
	for _, c := range []struct {
		name     string
		protobuf bool
		body     []byte
	}{{"listwatch-protobuf", true, pw}, {"listwatch-json", false, jw}} {
		b.Run(c.name, func(b *testing.B) {
			r := memPods(b, c.protobuf, nil, c.body)
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				w, err := r.Watch(ctx, wire.ListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				count(b, func() error { _, err := w.Next(); return err })
				w.Close()
			}
		})
	}
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

// BenchmarkDecodeProductionPodList decodes a page of benchItems pods of
// the bench's pods fixture (two containers, volumes, four conditions,
// managedFields of three managers: about 7 KiB each in protobuf), ours
// through the client's List and client-go's with its decoder.
func BenchmarkDecodeProductionPodList(b *testing.B) {
	pl := &corev1.PodList{}
	pl.ResourceVersion = "2000"
	for i := range benchItems {
		pl.Items = append(pl.Items, *bench.ProductionPod("bench", i))
	}
	pb := kubeEncode(b, pl)
	b.Run("listwatch-protobuf", func(b *testing.B) { benchOurList(b, true, pb) })
	b.Run("client-go-protobuf", func(b *testing.B) { benchClientGoList(b, pb) })
}
