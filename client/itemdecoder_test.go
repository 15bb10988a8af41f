package client

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/listwatch/listwatch/wire"
)

// itemRun is what an itemDecoder did with a list: the items each got, in
// order, and the error it returned.
type itemRun struct {
	got []string
	err error
}

var (
	errDecodeItem = errors.New("item does not decode")
	errEachItem   = errors.New("each refused the item")
	errReadBody   = errors.New("body read failed")
)

// runItems feeds items to an itemDecoder with workers goroutines and
// batches of batchItems items (or batchBytes bytes), as a list reader
// would: an item starting with 'x' does not decode, each refuses the
// eachFails-th item it gets (from 1; 0: none), and, when readFails, the
// body fails after the last item. The reader stops at the first error
// add returns, as the list readers do.
func runItems(t testing.TB, items [][]byte, workers, batchItems, batchBytes, eachFails int, readFails bool) itemRun {
	t.Helper()
	var run itemRun
	decode := func(raw []byte) (string, error) {
		if bytes.HasPrefix(raw, []byte("x")) {
			return "", fmt.Errorf("%w: %q", errDecodeItem, raw)
		}
		return string(raw), nil
	}
	each := func(s string) error {
		run.got = append(run.got, s)
		if len(run.got) == eachFails {
			return errEachItem
		}
		return nil
	}
	d := newItemDecoder(decode, each)
	d.workers, d.batchItems, d.batchBytes = workers, batchItems, batchBytes
	var readErr error
	for _, raw := range items {
		// The reader's buffer is reused for the next item.
		buf := slices.Clone(raw)
		if readErr = d.add(buf); readErr != nil {
			break
		}
		clear(buf)
	}
	if readErr == nil && readFails {
		readErr = errReadBody
	}
	run.err = d.finish(readErr)
	if d.work != nil || len(d.pending) != 0 {
		t.Fatalf("finish left workers (%v) or %d pending batches", d.work != nil, len(d.pending))
	}
	return run
}

func sameRun(a, b itemRun) bool {
	return slices.Equal(a.got, b.got) && (a.err == nil) == (b.err == nil) && (a.err == nil || a.err.Error() == b.err.Error())
}

func numberedItems(n int) [][]byte {
	items := make([][]byte, n)
	for i := range items {
		items[i] = []byte("item-" + strconv.Itoa(i))
	}
	return items
}

// TestItemDecoderKeepsOrder: items decoded by several workers reach each
// in the order they came, across many batches, whatever the batch size.
func TestItemDecoderKeepsOrder(t *testing.T) {
	items := numberedItems(5000)
	for _, batch := range []int{1, 3, 64, 10000} {
		run := runItems(t, items, 4, batch, 1<<20, 0, false)
		if run.err != nil {
			t.Fatalf("batch %d: %v", batch, run.err)
		}
		if len(run.got) != len(items) {
			t.Fatalf("batch %d: each got %d items, want %d", batch, len(run.got), len(items))
		}
		for i, s := range run.got {
			if s != string(items[i]) {
				t.Fatalf("batch %d: item %d is %q, want %q", batch, i, s, items[i])
			}
		}
	}
}

// TestItemDecoderErrorsComeInItemOrder: what a decode in place would
// have done, the parallel decoder does: items before a bad one reach
// each, then its error; each's own error stops the list at once; a body
// that fails after its items first hands them all over.
func TestItemDecoderErrorsComeInItemOrder(t *testing.T) {
	items := numberedItems(1000)
	bad := slices.Clone(items)
	bad[637] = []byte("x-637")
	cases := []struct {
		name      string
		items     [][]byte
		eachFails int
		readFails bool
		want      error
		wantItems int
	}{
		{"decode error", bad, 0, false, errDecodeItem, 637},
		{"decode error before a read error", bad, 0, true, errDecodeItem, 637},
		{"each error", items, 400, false, errEachItem, 400},
		{"each error before a decode error", bad, 400, true, errEachItem, 400},
		{"read error after every item", items, 0, true, errReadBody, 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, workers := range []int{1, 2, 4} {
				run := runItems(t, c.items, workers, 16, 1<<20, c.eachFails, c.readFails)
				if !errors.Is(run.err, c.want) {
					t.Fatalf("%d workers: error %v, want %v", workers, run.err, c.want)
				}
				if len(run.got) != c.wantItems {
					t.Fatalf("%d workers: each got %d items, want %d", workers, len(run.got), c.wantItems)
				}
			}
		})
	}
}

// TestItemDecoderSmallListStartsNoGoroutine: a list that fits one batch
// is decoded in place when it ends.
func TestItemDecoderSmallListStartsNoGoroutine(t *testing.T) {
	var got []string
	d := newItemDecoder(func(raw []byte) (string, error) { return string(raw), nil }, func(s string) error {
		got = append(got, s)
		return nil
	})
	d.workers = 4
	for _, raw := range numberedItems(10) {
		if err := d.add(raw); err != nil {
			t.Fatal(err)
		}
	}
	if d.work != nil {
		t.Fatal("workers started for a list of one batch")
	}
	if len(got) != 0 {
		t.Fatalf("items handed over before the list ended: %q", got)
	}
	if err := d.finish(nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[9] != "item-9" {
		t.Fatalf("each got %q", got)
	}
}

// TestItemDecoderBoundsWhatItHolds: the reader is held back once the
// workers are maxPending batches ahead of each, so a slow caller does not
// make the decoder buffer the list.
func TestItemDecoderBoundsWhatItHolds(t *testing.T) {
	d := newItemDecoder(func(raw []byte) (string, error) { return string(raw), nil }, func(string) error { return nil })
	d.workers, d.batchItems = 2, 4
	for _, raw := range numberedItems(2000) {
		if err := d.add(raw); err != nil {
			t.Fatal(err)
		}
		if len(d.pending) > d.maxPending() {
			t.Fatalf("%d batches pending, at most %d expected", len(d.pending), d.maxPending())
		}
	}
	if err := d.finish(nil); err != nil {
		t.Fatal(err)
	}
}

// FuzzItemDecoderMatchesInPlace: whatever the items, failures and batch
// sizes, several workers hand each the same items, in the same order, and
// return the same error as decoding each item in place.
func FuzzItemDecoderMatchesInPlace(f *testing.F) {
	f.Add([]byte("a\nb\nxc\nd"), uint8(2), uint8(0), false)
	f.Add([]byte("a\nb\nc\nd\ne\nf\ng"), uint8(3), uint8(5), true)
	f.Add([]byte("a\n\nxb"), uint8(1), uint8(0), true)
	f.Fuzz(func(t *testing.T, data []byte, batch, eachFails uint8, readFails bool) {
		items := bytes.Split(data, []byte("\n"))
		batchItems := int(batch%16) + 1
		want := runItems(t, items, 1, batchItems, 1<<20, int(eachFails), readFails)
		for _, workers := range []int{2, 4} {
			got := runItems(t, items, workers, batchItems, 8, int(eachFails), readFails)
			if !sameRun(got, want) {
				t.Fatalf("%d workers: got %q, %v; in place: %q, %v", workers, got.got, got.err, want.got, want.err)
			}
		}
	})
}

// TestItemDecoderStopsWorkersWhenEachPanics: a caller's each that panics
// leaves no worker behind.
func TestItemDecoderStopsWorkersWhenEachPanics(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var list bytes.Buffer
	list.WriteString(`{"items":[`)
	for i := range 5000 {
		if i > 0 {
			list.WriteByte(',')
		}
		fmt.Fprintf(&list, `{"metadata":{"name":"pod-%d","namespace":"ns"}}`, i)
	}
	list.WriteString(`]}`)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("each's panic did not reach the caller")
			}
		}()
		n := 0
		_, _ = readJSONList(&list, func(*testPod) error {
			if n++; n == 3000 {
				panic("each")
			}
			return nil
		})
	}()
	goleak.VerifyNone(t)
}

// TestItemDecoderStopsWorkersWhenProtobufEachPanics: the same for a
// protobuf list.
func TestItemDecoderStopsWorkersWhenProtobufEachPanics(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var items []byte
	for i := range 5000 {
		b, err := protoPod(i).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		items = protowire.AppendTag(items, 2, protowire.BytesType)
		items = protowire.AppendBytes(items, b)
	}
	body := wire.AppendEnvelope(nil, wire.TypeMeta{APIVersion: "v1", Kind: "PodList"}, items)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("each's panic did not reach the caller")
			}
		}()
		n := 0
		_, _, _ = (&Resource[*testPod]{}).readProtobufItems(bytes.NewReader(body), func(*testPod) error {
			if n++; n == 3000 {
				panic("each")
			}
			return nil
		}, nil)
	}()
	goleak.VerifyNone(t)
}

// TestItemDecoderDecodePanicReachesReader: a decode that panics on a
// worker panics again on the reading goroutine, after the items before
// it, where a decode in place would have (and a caller's recover catches
// it); no worker is left behind.
func TestItemDecoderDecodePanicReachesReader(t *testing.T) {
	for _, workers := range []int{1, 4} {
		var got []string
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			d := newItemDecoder(func(raw []byte) (string, error) {
				if string(raw) == "item-300" {
					panic("decode")
				}
				return string(raw), nil
			}, func(s string) error {
				got = append(got, s)
				return nil
			})
			defer d.stop()
			d.workers, d.batchItems = workers, 16
			for _, raw := range numberedItems(2000) {
				if err := d.add(raw); err != nil {
					t.Errorf("%d workers: add: %v", workers, err)
					return
				}
			}
			_ = d.finish(nil)
		}()
		if recovered != "decode" {
			t.Fatalf("%d workers: recovered %v, want the decode's panic", workers, recovered)
		}
		if len(got) != 300 || got[299] != "item-299" {
			t.Fatalf("%d workers: each got %d items before the panic, want 300", workers, len(got))
		}
		goleak.VerifyNone(t)
	}
}
