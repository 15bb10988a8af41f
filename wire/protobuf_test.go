package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// The tests against k8s.io/apimachinery's protobuf serializer, and
// FuzzDecodeProtobufStatus (kube's generated decoder as its oracle), are
// in the server module, under server/compat/wire. The seed corpora here
// (testdata/fuzz) hold what kube's encoder writes for a Pod, a Status and
// a PodList.

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add(AppendEnvelope(nil, TypeMeta{APIVersion: "v1", Kind: "Pod"}, []byte{0x0a, 0x03, 0x0a, 0x01, 'a'}))
	f.Add([]byte("k8s\x00"))
	f.Add([]byte("k8s\x00\x0a\x02\x0a\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEnvelope(data)
		if err != nil {
			if !errors.Is(err, ErrProtobuf) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		// Property: what decodes re-encodes to an envelope that decodes
		// to the same.
		again, err := DecodeEnvelope(AppendEnvelope(nil, e.TypeMeta, e.Raw))
		if err != nil || again.TypeMeta != e.TypeMeta || !bytes.Equal(again.Raw, e.Raw) {
			t.Fatalf("round trip: %v %+v vs %+v", err, again.TypeMeta, e.TypeMeta)
		}
	})
}

func FuzzDecodeProtobufList(f *testing.F) {
	f.Add([]byte{0x0a, 0x08, 0x12, 0x01, '1', 0x1a, 0x01, 'c', 0x20, 0x01, 0x12, 0x05, 0x0a, 0x03, 0x0a, 0x01, 'a'})
	f.Add([]byte{0x0a, 0x00, 0x12, 0x00})
	f.Add([]byte{0x12, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		var items [][]byte
		lm, err := DecodeProtobufList(data, func(b []byte) error {
			items = append(items, b)
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrProtobuf) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		// Property: re-encoding the list meta and items decodes the same.
		var meta, list []byte
		meta = appendString(meta, listMetaResourceVersion, lm.ResourceVersion)
		meta = appendString(meta, listMetaContinue, lm.Continue)
		if lm.RemainingItemCount != nil {
			meta = protowire.AppendTag(meta, listMetaRemainingItemCount, protowire.VarintType)
			meta = protowire.AppendVarint(meta, uint64(*lm.RemainingItemCount))
		}
		list = protowire.AppendTag(list, listMetadata, protowire.BytesType)
		list = protowire.AppendBytes(list, meta)
		for _, it := range items {
			list = protowire.AppendTag(list, listItems, protowire.BytesType)
			list = protowire.AppendBytes(list, it)
		}
		var items2 [][]byte
		lm2, err := DecodeProtobufList(list, func(b []byte) error {
			items2 = append(items2, b)
			return nil
		})
		if err != nil || !reflect.DeepEqual(lm, lm2) || len(items) != len(items2) {
			t.Fatalf("round trip: %v %+v %+v", err, lm, lm2)
		}
		for i := range items {
			if !bytes.Equal(items[i], items2[i]) {
				t.Fatalf("item %d changed", i)
			}
		}
	})
}
