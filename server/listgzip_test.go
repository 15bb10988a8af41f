package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/listwatch/listwatch/server/filters"
	"github.com/listwatch/listwatch/server/internal/gzsplice"
	"github.com/listwatch/listwatch/server/storage"
)

// gzipSelfRecorder stands for the Compression filter's writer.
type gzipSelfRecorder struct{ *httptest.ResponseRecorder }

func (gzipSelfRecorder) WouldGzip() bool             { return true }
func (w gzipSelfRecorder) SendGzipped(code int) bool { w.WriteHeader(code); return true }

// splicePage is a page of n items with values of random length, its runs
// at random places.
func splicePage(rng *rand.Rand, n int) storage.ListPage {
	page := storage.ListPage{}
	for i := range n {
		v := fmt.Sprintf(`{"apiVersion":"v1","kind":"K","i":%d,"pad":"%s"}`, i, bytes.Repeat([]byte("x"), rng.IntN(300)))
		page.Items = append(page.Items, storage.KV{Key: fmt.Sprint("/k/", i), Value: []byte(v)})
	}
	for at := rng.IntN(5); at < n; {
		l := 1 + rng.IntN(20)
		if at+l > n {
			break
		}
		page.Runs = append(page.Runs, storage.Run{Start: at, End: at + l, Memo: new(storage.RunMemo)})
		at += l + rng.IntN(3) // adjacent runs too
	}
	if len(page.Runs) == 0 {
		page.Runs = []storage.Run{{Start: 0, End: n, Memo: new(storage.RunMemo)}}
	}
	return page
}

// TestSpliceItems: the size spliceItems counts is exactly that of the
// items as a plain list writes them, whether the runs were compressed
// before or not; the threshold is kube's (a response of exactly 128 KiB
// is sent as is) and a response under it compresses no run; and the
// spliced stream gunzips to the plain list; items written typeless (a
// typed List's) have no apiVersion or kind in either.
func TestSpliceItems(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 40 {
		form := itemForm{key: "json test", sep: commaBytes, typeless: round%2 == 1, item: func(kv storage.KV) ([]byte, error) { return kv.Value, nil }}
		page := splicePage(rng, 1+rng.IntN(200))
		var plain bytes.Buffer
		for i, kv := range page.Items {
			form.write(&plain, i, kv.Value)
		}
		if typed := bytes.Contains(plain.Bytes(), []byte(`"kind":"K"`)); typed == form.typeless {
			t.Fatalf("round %d: typeless %v, items %.100s", round, form.typeless, plain.Bytes())
		}
		exact := int64(plain.Len())
		c := &call{w: gzipSelfRecorder{httptest.NewRecorder()}}
		// Just at the threshold: not spliced, and nothing compressed.
		if sp, err := c.spliceItems(page, form, filters.CompressionThreshold-exact); sp != nil || err != nil {
			t.Fatalf("round %d: spliced a response of exactly the threshold (%v)", round, err)
		}
		for _, r := range page.Runs {
			if _, ok := storage.PeekRun[gzsplice.Segment](r.Memo, form.key); ok {
				t.Fatalf("round %d: a run was compressed for a response under the threshold", round)
			}
		}
		// Some runs compressed by an earlier (other) list.
		for _, r := range page.Runs {
			if rng.IntN(2) == 0 {
				sub := storage.ListPage{Items: page.Items, Runs: []storage.Run{r}}
				if sp, _ := c.spliceItems(sub, form, filters.CompressionThreshold); sp == nil {
					t.Fatal("not spliced over the threshold")
				}
			}
		}
		over := filters.CompressionThreshold - exact + 1
		sp, err := c.spliceItems(page, form, over)
		if err != nil || sp == nil {
			t.Fatalf("round %d: not spliced one byte over the threshold (%v)", round, err)
		}
		if sp.size != exact {
			t.Fatalf("round %d: counted %d bytes of items, the list has %d", round, sp.size, exact)
		}
		rec := httptest.NewRecorder()
		c = &call{w: gzipSelfRecorder{rec}, s: &Server{metrics: testMetrics(t)}}
		head, tail := []byte(`{"items":[`), []byte("]}")
		if !c.sendSpliced(sp, "application/json", head, tail) {
			t.Fatal("sendSpliced refused")
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("round %d: gunzip: %v", round, err)
		}
		want := append(append(append([]byte(nil), head...), plain.Bytes()...), tail...)
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: gunzipped list differs:\n got %.200s\nwant %.200s", round, got, want)
		}
	}
}

func testMetrics(t *testing.T) *metrics {
	m, err := newMetrics(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
