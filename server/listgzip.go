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
// field (a List's items) or is written without its apiVersion and kind
// (typeless: a typed JSON List's items), and the key of the run memo
// holding runs of items in this form.
type itemForm struct {
	key      string
	sep      []byte
	framed   bool
	typeless bool
	item     func(kv storage.KV) ([]byte, error)
	// runItem, if set, replaces item when a run is compressed: it need
	// not keep what it encodes (an object's protobuf bytes in the cache's
	// entry, say), as the run's memo keeps it compressed.
	runItem func(kv storage.KV) ([]byte, error)
}

// size is how many bytes the item b takes in a list.
func (f itemForm) size(b []byte) int64 {
	switch {
	case f.framed:
		return int64(fieldLen(len(b)))
	case f.typeless:
		if n := typeMetaEnd(b); n > 0 {
			return int64(1 + len(b) - n)
		}
	}
	return int64(len(b))
}

// write writes item b, the i'th of the list, with the separator or field
// header before it; the error is the first of w's.
func (f itemForm) write(w io.Writer, i int, b []byte) error {
	if i > 0 && f.sep != nil {
		if _, err := w.Write(f.sep); err != nil {
			return err
		}
	}
	if f.framed {
		var hdr [1 + binary.MaxVarintLen64]byte
		if _, err := w.Write(appendVarint(append(hdr[:0], 2<<3|2), uint64(len(b)))); err != nil {
			return err
		}
	}
	if f.typeless {
		if n := typeMetaEnd(b); n > 0 {
			if _, err := w.Write(openBrace); err != nil {
				return err
			}
			b = b[n:]
		}
	}
	_, err := w.Write(b)
	return err
}

var openBrace = []byte{'{'}

// typeMetaEnd is where an object's JSON as serve stores it (kind and
// apiVersion first, in kube's typed order, or apiVersion and kind, as an
// earlier serve stored it: encode) goes on after them: "{" and b[n:] are
// the object without apiVersion and kind. 0 if b does not start so.
func typeMetaEnd(b []byte) int {
	if len(b) == 0 || b[0] != '{' {
		return 0
	}
	first, second := `"kind":"`, `"apiVersion":"`
	if len(b) > 1 && b[1] == '"' && len(b) > 2 && b[2] == 'a' {
		first, second = second, first
	}
	n, ok := skipStringField(b, 1, first)
	if !ok || n >= len(b) || b[n] != ',' {
		return 0
	}
	if n, ok = skipStringField(b, n+1, second); !ok || n >= len(b) {
		return 0
	}
	switch b[n] {
	case ',':
		return n + 1
	case '}':
		return n
	}
	return 0
}

// skipStringField returns the offset after the field at b[i:] that
// starts with head (a name and the value's opening quote) and has a
// string value without escapes.
func skipStringField(b []byte, i int, head string) (int, bool) {
	if i > len(b) || len(b)-i < len(head) || string(b[i:i+len(head)]) != head {
		return 0, false
	}
	i += len(head)
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			return 0, false
		}
	}
	return 0, false
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

// spliceItems prepares page's items for a response the handler gzips
// itself. It returns nil when that does not apply: the page has no runs,
// the form cannot be memoized, the client does not take gzip, or the
// response will not exceed the compression threshold with overhead bytes
// around the items (then the Compression filter holds it and sends it
// as is, and no run is compressed for it).
//
// A run compressed by an earlier list costs only its segment. A run
// compressed for the first time is encoded, and compressed once the
// response is known to exceed the threshold: until then its encoded
// items are held (at most the threshold's worth).
func (c *call) spliceItems(page storage.ListPage, f itemForm, overhead int64) (*splicedItems, error) {
	if len(page.Runs) == 0 || f.key == "" {
		return nil, nil
	}
	if g, ok := c.w.(filters.GzipSelf); !ok || !g.WouldGzip() {
		return nil, nil
	}
	runItem := f.item
	if f.runItem != nil {
		runItem = f.runItem
	}
	s := &splicedItems{n: len(page.Items), runs: page.Runs, segs: make([]gzsplice.Segment, len(page.Runs)), form: f}
	// size counts the overhead, every separator, and the items.
	size := overhead
	if s.n > 1 {
		size += int64(len(f.sep) * (s.n - 1))
	}
	type heldRun struct {
		j   int
		enc [][]byte
	}
	var held []heldRun // runs encoded but not compressed yet
	compress := func(j int, enc [][]byte) error {
		r := page.Runs[j]
		seg, err := storage.MemoizeRun(r.Memo, f.key, func() (gzsplice.Segment, error) {
			s.compressed++
			b := gzsplice.NewBuilder()
			for i, v := range enc {
				f.write(b, i, v)
			}
			return b.Segment(), nil
		})
		s.segs[j] = seg
		return err
	}
	encode := func(items []storage.KV, item func(storage.KV) ([]byte, error)) ([][]byte, error) {
		enc := make([][]byte, len(items))
		for i, kv := range items {
			b, err := item(kv)
			if err != nil {
				return nil, c.badStored(kv.Key, err)
			}
			enc[i] = b
			size += f.size(b)
		}
		return enc, nil
	}
	i := 0
	for j, r := range page.Runs {
		live, err := encode(page.Items[i:r.Start], f.item)
		if err != nil {
			return nil, err
		}
		s.live = append(s.live, live...)
		i = r.End
		if seg, ok := storage.PeekRun[gzsplice.Segment](r.Memo, f.key); ok {
			s.segs[j] = seg
			size += seg.Size - int64(len(f.sep)*(r.End-r.Start-1)) // its separators are counted
			continue
		}
		enc, err := encode(page.Items[r.Start:r.End], runItem)
		if err != nil {
			return nil, err
		}
		held = append(held, heldRun{j, enc})
		if size <= filters.CompressionThreshold {
			continue
		}
		// Over the threshold: compress what is held.
		for _, h := range held {
			if err := compress(h.j, h.enc); err != nil {
				return nil, err
			}
		}
		held = held[:0]
	}
	live, err := encode(page.Items[i:], f.item)
	if err != nil {
		return nil, err
	}
	s.live = append(s.live, live...)
	if size <= filters.CompressionThreshold {
		return nil, nil
	}
	for _, h := range held {
		if err := compress(h.j, h.enc); err != nil {
			return nil, err
		}
	}
	s.size = size - overhead
	return s, nil
}

func (c *call) badStored(key string, err error) error {
	c.s.log.Error("list: bad stored value", slog.String("key", key), slog.Any("err", err))
	return wire.NewInternalError(fmt.Errorf("encoding %s: %w", key, err))
}

// sendSpliced writes a list whose items are s, between head and tail,
// gzip-compressed by the handler. It returns false, writing nothing, if
// the response has started.
func (c *call) sendSpliced(s *splicedItems, contentType string, head, tail []byte) bool {
	c.w.Header().Set("Content-Type", contentType)
	if !c.w.(filters.GzipSelf).SendGzipped(200) {
		return false
	}
	bw := listWriter(c.w)
	defer bw.release()
	z := gzsplice.NewWriter(bw)
	z.Write(head)
	i, live := 0, 0
	afterRun := false // the last thing written was a run's segment
	for j, r := range s.runs {
		for ; i < r.Start; i++ {
			s.form.write(z, i, s.live[live])
			live++
			afterRun = false
		}
		if i > 0 && s.form.sep != nil {
			if afterRun {
				// Between two runs: as a stored block, so that the live
				// compressor is not started only to be flushed again.
				z.WriteSegment(gzsplice.Stored(s.form.sep))
			} else {
				z.Write(s.form.sep)
			}
		}
		z.WriteSegment(s.segs[j])
		i = r.End
		afterRun = true
	}
	for ; i < s.n; i++ {
		s.form.write(z, i, s.live[live])
		live++
	}
	// Counted before the list's last bytes go: a client that has read
	// the whole list, then the metrics, sees it counted.
	c.s.metrics.listRuns.WithLabelValues("compressed").Add(float64(s.compressed))
	c.s.metrics.listRuns.WithLabelValues("reused").Add(float64(len(s.runs) - s.compressed))
	z.Write(tail)
	if z.Close() == nil {
		_ = bw.Flush()
	}
	c.tr.Step("Writing http response done", slog.Int("count", s.n), slog.Int("runs", len(s.runs)), slog.Int("compressed", s.compressed))
	return true
}
