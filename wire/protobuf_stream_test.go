package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"testing/iotest"

	"google.golang.org/protobuf/encoding/protowire"
)

// readAll reads a list with ReadProtobufList, whole or a byte at a time.
func readAll(data []byte, oneByte bool) (TypeMeta, ListMeta, [][]byte, error) {
	var items [][]byte
	var r = bytes.NewReader(data)
	var src = any(r).(interface{ Read([]byte) (int, error) })
	if oneByte {
		src = iotest.OneByteReader(r)
	}
	tm, lm, err := ReadProtobufList(src, func(b []byte) error {
		items = append(items, bytes.Clone(b))
		return nil
	})
	return tm, lm, items, err
}

// rawFields counts the envelope's Raw fields, or -1 when it has no
// well-formed fields.
func rawFields(data []byte) int {
	if !IsProtobufEnvelope(data) {
		return -1
	}
	n := 0
	if eachField(data[len(protobufMagic):], func(f field) error {
		if f.num == unknownRaw {
			n++
		}
		return nil
	}) != nil {
		return -1
	}
	return n
}

// FuzzReadProtobufList: reading a list as it arrives gives what decoding
// it whole (DecodeEnvelope, then DecodeProtobufList) gives, read at once
// or a byte at a time, and fails only where that fails or where the
// envelope holds more than one object.
func FuzzReadProtobufList(f *testing.F) {
	list := []byte{0x0a, 0x08, 0x12, 0x01, '1', 0x1a, 0x01, 'c', 0x20, 0x01, 0x12, 0x05, 0x0a, 0x03, 0x0a, 0x01, 'a'}
	f.Add(AppendEnvelope(nil, TypeMeta{APIVersion: "v1", Kind: "PodList"}, list))
	f.Add(AppendEnvelope(nil, TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, nil))
	f.Add([]byte("k8s\x00\x12\x03\x12\x01\x00"))
	f.Add([]byte("k8s\x00\x13\x0c\x14\x12\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tm, lm, items, err := readAll(data, false)
		tm1, lm1, items1, err1 := readAll(data, true)
		if (err == nil) != (err1 == nil) || !reflect.DeepEqual(tm, tm1) || !reflect.DeepEqual(lm, lm1) || !reflect.DeepEqual(items, items1) {
			t.Fatalf("whole: %v %+v %+v %d items; byte by byte: %v %+v %+v %d items", err, tm, lm, len(items), err1, tm1, lm1, len(items1))
		}
		var wantItems [][]byte
		e, werr := DecodeEnvelope(data)
		var wantLM ListMeta
		if werr == nil {
			wantLM, werr = DecodeProtobufList(e.Raw, func(b []byte) error {
				wantItems = append(wantItems, bytes.Clone(b))
				return nil
			})
		}
		if err != nil {
			if !errors.Is(err, ErrProtobuf) {
				t.Fatalf("undocumented error %v", err)
			}
			if werr == nil && rawFields(data) <= 1 {
				t.Fatalf("stream: %v; whole: ok", err)
			}
			return
		}
		if werr != nil {
			t.Fatalf("stream: ok; whole: %v", werr)
		}
		if tm != e.TypeMeta || !reflect.DeepEqual(lm, wantLM) || len(items) != len(wantItems) {
			t.Fatalf("stream %+v %+v %d items; whole %+v %+v %d items", tm, lm, len(items), e.TypeMeta, wantLM, len(wantItems))
		}
		for i := range items {
			if !bytes.Equal(items[i], wantItems[i]) {
				t.Fatalf("item %d: %x, whole %x", i, items[i], wantItems[i])
			}
		}
	})
}

// TestReadProtobufListLargeItem: an item longer than a read chunk arrives
// whole, and one whose length runs past the data is an error.
func TestReadProtobufListLargeItem(t *testing.T) {
	item := bytes.Repeat([]byte{0x0a, 0x00}, readChunk) // 2 MiB of empty fields
	list := protowire.AppendTag(nil, listItems, protowire.BytesType)
	list = protowire.AppendBytes(list, item)
	data := AppendEnvelope(nil, TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, list)
	_, _, items, err := readAll(data, false)
	if err != nil || len(items) != 1 || !bytes.Equal(items[0], item) {
		t.Fatalf("%v, %d items", err, len(items))
	}
	_, _, _, err = readAll(data[:len(data)-len(item)/2], false)
	if !errors.Is(err, ErrProtobuf) {
		t.Fatalf("truncated: %v", err)
	}
}

// BenchmarkReadProtobufList reads a list of 10,000 items of 1 KiB as it
// arrives; an item that fits the reader's buffer is handed over in place,
// so allocations do not grow with the items.
func BenchmarkReadProtobufList(b *testing.B) {
	item := bytes.Repeat([]byte{0x0a, 0x02, 'a', 'b'}, 256)
	var list []byte
	for range 10_000 {
		list = protowire.AppendTag(list, listItems, protowire.BytesType)
		list = protowire.AppendBytes(list, item)
	}
	data := AppendEnvelope(nil, TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, list)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		_, _, err := ReadProtobufList(bytes.NewReader(data), func(p []byte) error {
			n += len(p)
			return nil
		})
		if err != nil || n != 10_000*len(item) {
			b.Fatal(err, n)
		}
	}
}

// failingAt reads r, then fails with err where r ends.
type failingAt struct {
	r   io.Reader
	err error
}

func (f *failingAt) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// TestReadProtobufListReaderErrors: a read that fails (a cancelled
// request, a reset connection, corrupt gzip) anywhere in a page is
// returned as it is, not as malformed protobuf; a page that merely ends
// inside a value is malformed protobuf.
func TestReadProtobufListReaderErrors(t *testing.T) {
	item := bytes.Repeat([]byte{0x0a, 0x00}, 100)
	list := protowire.AppendBytes(protowire.AppendTag(nil, listItems, protowire.BytesType), item)
	list = protowire.AppendBytes(protowire.AppendTag(list, 99, protowire.BytesType), []byte("skipped"))
	data := AppendEnvelope(nil, TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, list)
	for cut := range len(data) {
		_, _, err := ReadProtobufList(&failingAt{bytes.NewReader(data[:cut]), context.Canceled}, func([]byte) error { return nil })
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrProtobuf) {
			t.Fatalf("cut at %d of %d: %v, want context.Canceled as it is", cut, len(data), err)
		}
		// Cut between two fields, the page is a shorter message; inside
		// one, it is malformed.
		_, _, err = ReadProtobufList(bytes.NewReader(data[:cut]), func([]byte) error { return nil })
		if err != nil && !errors.Is(err, ErrProtobuf) {
			t.Fatalf("page ending at %d of %d: %v, want ErrProtobuf", cut, len(data), err)
		}
		if in := bytes.Index(data, list); cut >= in && cut < in+len(list) && err == nil {
			t.Fatalf("page ending inside its list, at %d of %d, was read whole", cut, len(data))
		}
	}
}

// TestReadProtobufListDeepGroups: millions of nested group starts (an
// unknown field a server sends) are skipped without growing the stack:
// the read fails with ErrProtobuf, where recursing once per group took
// the process down with a stack overflow.
func TestReadProtobufListDeepGroups(t *testing.T) {
	data := append([]byte("k8s\x00"), bytes.Repeat([]byte{0x0b}, 16<<20)...)
	_, _, err := ReadProtobufList(bytes.NewReader(data), func([]byte) error { return nil })
	if !errors.Is(err, ErrProtobuf) {
		t.Fatalf("got %v, want ErrProtobuf", err)
	}
}
