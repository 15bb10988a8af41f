package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"

	"github.com/listwatch/listwatch/server/filters"
	"github.com/listwatch/listwatch/server/internal/gzsplice"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// A large list is mostly objects that have not changed since the last
// list, and gzip, which kube applies to responses over 128 KiB, was three
// fifths of serve's CPU for an unpaged one. The watch cache marks runs of
// a page's items that it keeps together (storage.Run, a subtree of its
// tree); a list sends each run as DEFLATE compressed by the first list
// that sent it, spliced between the parts it compresses live (the list's
// envelope, the few items outside runs). Only the changed runs are
// compressed again.

// itemForm is how a list writes its items: the bytes of one item, the
// separator between two (JSON's comma), whether each goes in a protobuf
// field (a List's items), and the key of the run memo holding runs of
// items in this form.
type itemForm struct {
	key    string
	sep    []byte
	framed bool
	item   func(kv storage.KV) ([]byte, error)
	// runItem, if set, replaces item when a run is compressed: it need
	// not keep what it encodes (an object's protobuf bytes in the cache's
	// entry, say), as the run's memo keeps it compressed.
	runItem func(kv storage.KV) ([]byte, error)
}

// size is how many bytes the item b takes in a list.
func (f itemForm) size(b []byte) int64 {
	if f.framed {
		return int64(fieldLen(len(b)))
	}
	return int64(len(b))
}

// write writes item b, the i'th of the list, with the separator or field
// header before it.
func (f itemForm) write(w io.Writer, i int, b []byte) {
	if i > 0 && f.sep != nil {
		w.Write(f.sep)
	}
	if f.framed {
		var hdr [1 + binary.MaxVarintLen64]byte
		w.Write(appendVarint(append(hdr[:0], 2<<3|2), uint64(len(b))))
	}
	w.Write(b)
}

// splicedItems are a page's items ready to be spliced: each run as its
// compressed segment, the other items as bytes to compress live.
type splicedItems struct {
	n    int // items
	runs []storage.Run
	segs []gzsplice.Segment // segs[i] holds runs[i]
	live [][]byte           // the items outside runs, in order
	size int64              // uncompressed bytes of the items and separators
	form itemForm
	// compressed counts the runs compressed for this list; the others'
	// compressed bytes were reused.
	compressed int
}

// spliceItems prepares page's items when the response may be gzipped by
// the handler: nil when the page has no runs, the form cannot be
// memoized, or the client does not take gzip.
func (c *call) spliceItems(page storage.ListPage, f itemForm) (*splicedItems, error) {
	if len(page.Runs) == 0 || f.key == "" {
		return nil, nil
	}
	if g, ok := c.w.(filters.GzipSelf); !ok || !g.WouldGzip() {
		return nil, nil
	}
	s := &splicedItems{n: len(page.Items), runs: page.Runs, segs: make([]gzsplice.Segment, len(page.Runs)), form: f}
	i := 0
	addLive := func(to int) error {
		for ; i < to; i++ {
			b, err := f.item(page.Items[i])
			if err != nil {
				return c.badStored(page.Items[i].Key, err)
			}
			s.live = append(s.live, b)
			s.size += f.size(b)
		}
		return nil
	}
	for j, r := range page.Runs {
		if err := addLive(r.Start); err != nil {
			return nil, err
		}
		seg, err := storage.MemoizeRun(r.Memo, f.key, func() (gzsplice.Segment, error) {
			s.compressed++
			return compressRun(page.Items[r.Start:r.End], f)
		})
		if err != nil {
			return nil, err
		}
		s.segs[j] = seg
		s.size += seg.Size
		i = r.End
	}
	if err := addLive(len(page.Items)); err != nil {
		return nil, err
	}
	if s.n > 1 {
		s.size += int64(len(f.sep) * (s.n - 1))
	}
	return s, nil
}

// compressRun compresses items in form f, separated as in a list.
func compressRun(items []storage.KV, f itemForm) (gzsplice.Segment, error) {
	item := f.item
	if f.runItem != nil {
		item = f.runItem
	}
	b := gzsplice.NewBuilder()
	for i, kv := range items {
		v, err := item(kv)
		if err != nil {
			b.Segment() // gives the compressor back
			return gzsplice.Segment{}, fmt.Errorf("encoding %s: %w", kv.Key, err)
		}
		f.write(b, i, v)
	}
	return b.Segment(), nil
}

func (c *call) badStored(key string, err error) error {
	c.s.log.Error("list: bad stored value", slog.String("key", key), slog.Any("err", err))
	return wire.NewInternalError(fmt.Errorf("encoding %s: %w", key, err))
}

// sendSpliced writes a list whose items are s, between head and tail,
// gzip-compressed by the handler, if the whole exceeds the compression
// threshold (else it is sent as is, and false returned without writing).
func (c *call) sendSpliced(s *splicedItems, contentType string, head, tail []byte) bool {
	if int64(len(head))+s.size+int64(len(tail)) <= filters.CompressionThreshold {
		return false
	}
	c.w.Header().Set("Content-Type", contentType)
	if !c.w.(filters.GzipSelf).SendGzipped(200) {
		return false
	}
	bw := listWriter(c.w)
	defer bw.release()
	z := gzsplice.NewWriter(bw)
	z.Write(head)
	i, live := 0, 0
	for j, r := range s.runs {
		for ; i < r.Start; i++ {
			s.form.write(z, i, s.live[live])
			live++
		}
		if i > 0 && s.form.sep != nil {
			z.Write(s.form.sep)
		}
		z.WriteSegment(s.segs[j])
		i = r.End
	}
	for ; i < s.n; i++ {
		s.form.write(z, i, s.live[live])
		live++
	}
	z.Write(tail)
	if z.Close() == nil {
		_ = bw.Flush()
	}
	c.s.metrics.listRuns.WithLabelValues("compressed").Add(float64(s.compressed))
	c.s.metrics.listRuns.WithLabelValues("reused").Add(float64(len(s.runs) - s.compressed))
	c.tr.Step("Writing http response done", slog.Int("count", s.n), slog.Int("runs", len(s.runs)), slog.Int("compressed", s.compressed))
	return true
}
