package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"

	validationpath "k8s.io/apimachinery/pkg/api/validation/path"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// list answers a LIST: options validated as kube does, one page read from
// the Reader, and the response streamed item by item.
func (c *call) list() error {
	out, err := c.output()
	if err != nil {
		return err
	}
	o, err := listOptions(c.r.URL.Query())
	if err != nil {
		return err
	}
	pred, err := predicate(c.res, o.LabelSelector, o.FieldSelector)
	if err != nil {
		return err
	}
	if o.Beyond != 0 {
		return c.beyondRV(o.Beyond)
	}
	page, err := c.readPage(o.ListOptions(pred))
	if err != nil {
		return err
	}
	if page.Items, err = c.res.servedPage(page.Items); err != nil {
		return err
	}
	if err := c.asPartial(out, true); err != nil {
		return err
	}
	meta := wire.ListMeta{
		ResourceVersion:    strconv.FormatInt(page.Revision, 10),
		Continue:           page.Continue,
		RemainingItemCount: page.RemainingItemCount,
	}
	switch {
	case out.proto:
		return c.protoList(out, meta, page)
	case out.form == formTable:
		values := make([][]byte, len(page.Items))
		for i, kv := range page.Items {
			values[i] = c.res.relabel(kv.Value)
		}
		opts, err := c.tableOptions(out)
		if err != nil {
			return err
		}
		t, err := c.listTable(opts, values, meta)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, t)
	case out.form == formPartial:
		return c.partialList(out, meta, page)
	default:
		return c.streamObjects(meta, page, c.res.runKey("json"))
	}
	c.tr.Step("Writing http response done")
	return nil
}

// readPage reads one page of the collection as o asks, its items as
// stored: an expired continue token is kube's 410 about it.
//
// A field selector that pins one name (in a namespace, for a namespaced
// kind) reads that one key, as kube's store does (MatchesSingle): one
// page, never continued.
func (c *call) readPage(o storage.GetListOptions) (storage.ListPage, error) {
	prefix, single := c.res.prefix(c.ns), ""
	if name, ok := o.Predicate.Field.RequiresExactMatch("metadata.name"); ok && o.Continue == "" &&
		(c.ns != "" || !c.res.namespaced) && len(validationpath.IsValidPathSegmentName(name)) == 0 {
		single = c.res.key(c.ns, name)
		prefix = single
	}
	page, err := c.res.reader.GetList(c.r.Context(), prefix, o)
	c.tr.Step("Listing from storage done", slog.Int("count", len(page.Items)))
	if err != nil {
		var compacted *storage.CompactedError
		if errors.As(err, &compacted) {
			if o.Continue != "" {
				return page, continueExpired()
			}
			// kube's etcd store's message: a list at a revision it compacted.
			return page, wire.NewResourceExpired("The resourceVersion for the provided list is too old.")
		}
		return page, storageError(err, c.res, "")
	}
	if single != "" {
		// The key is also the prefix of longer names: only it counts.
		page.Items = slices.DeleteFunc(page.Items, func(kv storage.KV) bool { return kv.Key != single })
		page.Continue, page.RemainingItemCount = "", nil
	}
	return page, nil
}

// listWriters buffer list responses (32 KiB each), kept across requests
// so that a page does not allocate one.
var listWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// listOut is where a list response goes piece by piece: a pooled buffer in
// front of the response writer, or the writer itself when it buffers small
// writes below (the gzip filter does, while it holds a response or
// compresses it). Copying every item into a buffer only for the gzip
// writer to copy it again into its window was a tenth of serve's CPU for
// an unpaged list. Give it back with release.
type listOut struct {
	bw *bufio.Writer // nil: writes go to w directly
	w  io.Writer
}

// buffersWrites is implemented by response writers (the gzip filter's)
// that take small writes cheaply.
type buffersWrites interface{ BuffersWrites() bool }

func listWriter(w io.Writer) listOut {
	if b, ok := w.(buffersWrites); ok && b.BuffersWrites() {
		return listOut{w: w}
	}
	bw := listWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	return listOut{bw: bw, w: bw}
}

var (
	commaBytes = []byte{','}
	listTail   = []byte("]}\n") // ends a JSON list's items and the list
)

func (o listOut) Write(p []byte) (int, error)       { return o.w.Write(p) }
func (o listOut) WriteString(s string) (int, error) { return io.WriteString(o.w, s) }
func (o listOut) comma() error                      { _, err := o.w.Write(commaBytes); return err }

// Flush sends what the buffer holds; the writer below flushes when the
// handler returns.
func (o listOut) Flush() error {
	if o.bw == nil {
		return nil
	}
	return o.bw.Flush()
}

// release returns the buffer to the pool, dropping what it held unflushed
// and its response writer.
func (o listOut) release() {
	if o.bw != nil {
		o.bw.Reset(nil)
		listWriters.Put(o.bw)
	}
}

// partialList streams page as a PartialObjectMetadataList of out's
// version. Only v1's runs of items are kept compressed for gzipped lists
// (the deprecated v1beta1 would keep the same again under its own key).
// An empty one has "items": null, as kube's, which makes the list afresh
// from the items there are.
func (c *call) partialList(out output, meta wire.ListMeta, page storage.ListPage) error {
	apiVersion := out.metaAPIVersion()
	h := listHead{kind: "PartialObjectMetadataList", apiVersion: apiVersion, meta: meta}
	if len(page.Items) == 0 {
		head, _, err := h.marshal()
		if err != nil {
			return err
		}
		writeRaw(c.w, http.StatusOK, append(head[:len(head)-len("[")], "null}"...))
		c.tr.Step("Writing http response done")
		return nil
	}
	f := itemForm{item: func(kv storage.KV) ([]byte, error) { return partialObject(kv.Value, apiVersion) }}
	if out.metaVersion == "v1" {
		f.key = "json partial"
	}
	return c.streamList(h, page, f)
}

// streamObjects streams page as a list of r's kind in JSON. As kube's, a
// built-in kind's list items carry no apiVersion and kind (its typed List
// encodes none); a custom resource's do, and its list's metadata always
// has continue (its list is unstructured, whose continue kube's storage
// sets, "" at the end).
func (c *call) streamObjects(meta wire.ListMeta, page storage.ListPage, runKey string) error {
	cr := c.res.crd != ""
	return c.streamList(listHead{kind: c.res.listKind, apiVersion: c.res.apiVersion(), meta: meta, continueAlways: cr, keyOrder: cr}, page,
		itemForm{key: runKey, typeless: !cr, item: func(kv storage.KV) ([]byte, error) { return c.res.relabel(kv.Value), nil }})
}

// listHead is what a JSON list says before its items.
type listHead struct {
	kind, apiVersion string
	meta             wire.ListMeta
	// continueAlways: metadata.continue even when it is "".
	continueAlways bool
	// keyOrder: the list's keys in order, as kube encodes an
	// unstructured list (a custom resource's): apiVersion, items, kind,
	// metadata.
	keyOrder bool
}

// marshal is the list's JSON up to and including `"items":[`, and what
// follows its items (listTail, but for keyOrder).
func (h listHead) marshal() (head, tail []byte, err error) {
	if h.keyOrder {
		head, err = json.Marshal(h.apiVersion)
		if err != nil {
			return nil, nil, err
		}
		head = append(append([]byte(`{"apiVersion":`), head...), `,"items":[`...)
		kind, err := json.Marshal(h.kind)
		if err != nil {
			return nil, nil, err
		}
		meta, err := json.Marshal(struct {
			Continue           string `json:"continue"`
			RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
			ResourceVersion    string `json:"resourceVersion,omitempty"`
		}{h.meta.Continue, h.meta.RemainingItemCount, h.meta.ResourceVersion})
		if err != nil {
			return nil, nil, err
		}
		tail = append(append(append(append([]byte(`],"kind":`), kind...), `,"metadata":`...), meta...), "}\n"...)
		return head, tail, nil
	}
	var meta any = h.meta
	if h.continueAlways {
		meta = struct {
			ResourceVersion    string `json:"resourceVersion,omitempty"`
			Continue           string `json:"continue"`
			RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
		}{h.meta.ResourceVersion, h.meta.Continue, h.meta.RemainingItemCount}
	}
	head, err = json.Marshal(struct {
		wire.TypeMeta
		Metadata any `json:"metadata"`
	}{wire.TypeMeta{Kind: h.kind, APIVersion: h.apiVersion}, meta})
	if err != nil {
		return nil, nil, err
	}
	return append(head[:len(head)-1], `,"items":[`...), listTail, nil
}

// streamList writes the list envelope and then each item's bytes (f's
// item, key and typeless; its separator is JSON's comma), so the response
// is never built whole in memory. Once the header is written an error can
// only cut the stream short, which the client sees as a truncated body.
// Runs of items (page.Runs) are spliced in compressed when the response
// is gzipped (listgzip.go), under the run memo key f.key ("" for none).
func (c *call) streamList(h listHead, page storage.ListPage, f itemForm) error {
	f.sep = commaBytes
	items := page.Items
	head, tail, err := h.marshal()
	if err != nil {
		return err
	}
	sp, err := c.spliceItems(page, f, int64(len(head)+len(tail)))
	if err != nil {
		return err
	}
	if sp != nil && c.sendSpliced(sp, "application/json", head, tail) {
		return nil
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(http.StatusOK)
	bw := listWriter(c.w)
	defer bw.release()
	bw.Write(head)
	for i, kv := range items {
		b, err := f.item(kv)
		if err != nil {
			c.s.log.Error("list: bad stored value", slog.String("key", kv.Key), slog.Any("err", err))
			return nil
		}
		if err := f.write(bw, i, b); err != nil {
			return nil // the client went away
		}
	}
	bw.Write(tail)
	_ = bw.Flush()
	c.tr.Step("Writing http response done", slog.Int("count", len(items)))
	return nil
}

// table renders values, a GET's object or a watch event's, as a
// meta.k8s.io Table, as opts says, with meta as its list metadata: a row
// each, as kube prints one object.
func (c *call) table(opts tableOptions, values [][]byte, meta wire.ListMeta) (*wire.Table, error) {
	return c.tableOf(opts, values, meta, nil)
}

// listTable is table for a page of a list: the rows of a kind whose list
// printer orders or marks them (listPrinted, kubeprint.go) are that
// printer's.
func (c *call) listTable(opts tableOptions, values [][]byte, meta wire.ListMeta) (*wire.Table, error) {
	var page []printedRow
	if t := c.res.typed(); t != nil {
		rows, ok, err := t.printedPage(values)
		if err != nil {
			return nil, wire.NewInternalError(err)
		}
		if ok {
			page = rows
		}
	}
	return c.tableOf(opts, values, meta, page)
}

// tableOf renders values as a Table: the rows of page when it is not
// nil (cells made, in its order), else one for each value in turn.
func (c *call) tableOf(opts tableOptions, values [][]byte, meta wire.ListMeta, page []printedRow) (*wire.Table, error) {
	t := &wire.Table{
		TypeMeta: wire.TypeMeta{Kind: "Table", APIVersion: opts.apiVersion},
		Metadata: meta,
		Rows:     make([]wire.TableRow, 0, len(values)),
	}
	if !opts.noHeaders {
		t.ColumnDefinitions = tableColumns(c.res)
	}
	now := c.s.now()
	if page == nil {
		page = make([]printedRow, len(values))
		for i := range page {
			page[i].index = i
		}
	}
	for _, p := range page {
		row, err := tableRow(c.res, values[p.index], p.cells, opts, now)
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}
