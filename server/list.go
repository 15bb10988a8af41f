package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// list answers a LIST: options validated as kube does, one page read from
// the Reader, and the response streamed item by item.
func (c *call) list() error {
	out, err := negotiate(c.r.Header.Get("Accept"), c.res)
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
	page, err := c.res.reader.GetList(c.r.Context(), c.res.prefix(c.ns), o.ListOptions(pred))
	c.tr.Step("Listing from storage done", slog.Int("count", len(page.Items)))
	if err != nil {
		var compacted *storage.CompactedError
		if o.Continue != "" && errors.As(err, &compacted) {
			return continueExpired()
		}
		return storageError(err, c.res, "")
	}
	meta := wire.ListMeta{
		ResourceVersion:    strconv.FormatInt(page.Revision, 10),
		Continue:           page.Continue,
		RemainingItemCount: page.RemainingItemCount,
	}
	switch {
	case out.proto:
		return c.protoList(out, meta, page.Items)
	case out.form == formTable:
		values := make([][]byte, len(page.Items))
		for i, kv := range page.Items {
			values[i] = c.res.relabel(kv.Value)
		}
		t, err := c.table(out, values, meta)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, t)
	case out.form == formPartial:
		return c.streamList(meta, "PartialObjectMetadataList", "meta.k8s.io/v1", page.Items, partialObject)
	default:
		return c.streamList(meta, c.res.listKind, c.res.apiVersion(), page.Items, func(b []byte) ([]byte, error) {
			return c.res.relabel(b), nil
		})
	}
	c.tr.Step("Writing http response done")
	return nil
}

// listWriters buffer list responses (32 KiB each), kept across requests
// so that a page does not allocate one.
var listWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// listWriter is a pooled writer to w; give it back with putListWriter.
func listWriter(w io.Writer) *bufio.Writer {
	bw := listWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

// putListWriter returns bw to the pool, dropping what it held unflushed
// and its response writer.
func putListWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	listWriters.Put(bw)
}

// streamList writes the list envelope and then each item's bytes, so the
// response is never built whole in memory. Once the header is written an
// error can only cut the stream short, which the client sees as a
// truncated body.
func (c *call) streamList(meta wire.ListMeta, kind, apiVersion string, items []storage.KV, conv func([]byte) ([]byte, error)) error {
	head, err := json.Marshal(struct {
		wire.TypeMeta
		Metadata wire.ListMeta `json:"metadata"`
	}{wire.TypeMeta{Kind: kind, APIVersion: apiVersion}, meta})
	if err != nil {
		return err
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(http.StatusOK)
	bw := listWriter(c.w)
	defer putListWriter(bw)
	bw.Write(head[:len(head)-1])
	bw.WriteString(`,"items":[`)
	for i, kv := range items {
		b, err := conv(kv.Value)
		if err != nil {
			c.s.log.Error("list: bad stored value", slog.String("key", kv.Key), slog.Any("err", err))
			return nil
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		if _, err := bw.Write(b); err != nil {
			return nil // the client went away
		}
	}
	bw.WriteString("]}\n")
	_ = bw.Flush()
	c.tr.Step("Writing http response done", slog.Int("count", len(items)))
	return nil
}

// table renders values as a meta.k8s.io Table with meta as its list
// metadata.
func (c *call) table(out output, values [][]byte, meta wire.ListMeta) (*wire.Table, error) {
	include := includeObject(c.r.URL.Query().Get("includeObject"))
	switch include {
	case "":
		include = includeMetadata
	case includeNone, includeMetadata, includeFull:
	default:
		return nil, wire.NewBadRequest("includeObject: unsupported value " + strconv.Quote(string(include)))
	}
	t := &wire.Table{
		TypeMeta:          wire.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/" + out.tableVersion},
		Metadata:          meta,
		ColumnDefinitions: tableColumns(c.res),
		Rows:              make([]wire.TableRow, 0, len(values)),
	}
	now := c.s.now()
	for _, v := range values {
		row, err := tableRow(c.res, v, include, now)
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}
