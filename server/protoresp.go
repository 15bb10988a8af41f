package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// writeProtoObject writes one stored value as a protobuf body: the object,
// or its partial metadata. (A Table is never protobuf: negotiate.)
func (c *call) writeProtoObject(code int, out output, value []byte) error {
	var body []byte
	switch out.form {
	case formPartial:
		raw, err := partialItem(value)
		if err != nil {
			return wire.NewInternalError(err)
		}
		body = envelope(out.metaAPIVersion(), "PartialObjectMetadata", raw)
	default:
		raw, err := c.protoWritten(value)
		if err != nil {
			return wire.NewInternalError(err)
		}
		body = envelope(c.res.apiVersion(), c.res.kind, raw)
	}
	writeBody(c.w, code, mediaProto, body)
	c.tr.Step("Writing http response done")
	return nil
}

// writeExternal writes obj, an object of a built-in kind a subresource
// answers with (a Scale, a TokenRequest), of apiVersion and kind, in the
// negotiated media type, as kube's handlers encode a subresource's
// object with the codecs of the built-in kinds: protobuf when asked for
// (output), else JSON (YAML is converted from it: yamlresp.go); or in the
// meta.k8s.io form asked for (writeTransformed).
func (c *call) writeExternal(code int, apiVersion, kind string, obj subresourceObject) error {
	out, err := c.output()
	if err != nil {
		return err
	}
	if out.form != formJSON {
		return c.writeTransformed(code, out, obj) // subtable.go
	}
	if out.proto {
		raw, err := obj.Marshal()
		if err != nil {
			return wire.NewInternalError(err)
		}
		writeBody(c.w, code, mediaProto, envelope(apiVersion, kind, raw))
		c.tr.Step("Writing http response done")
		return nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return wire.NewInternalError(err)
	}
	writeRaw(c.w, code, b)
	return nil
}

// protoList writes a list in protobuf: the items' messages (from the
// cache's memo where the page came from it) each as field 2 after the
// list metadata (field 1), inside the envelope; meta.k8s.io/v1beta1's
// PartialObjectMetadataList numbers them the other way (items 1, metadata
// 2), so its metadata comes last, and its runs are not kept compressed
// (partialList). The items are encoded (or found) first, as the
// envelope's length precedes them; nothing is written if one fails.
func (c *call) protoList(out output, meta wire.ListMeta, page storage.ListPage) error {
	items := page.Items
	itemsNum, metaNum := 2, 1
	if out.form == formPartial && out.metaVersion == "v1beta1" {
		itemsNum, metaNum = 1, 2
	}
	lm, err := protoListMeta(meta, metaNum)
	if err != nil {
		return wire.NewInternalError(err)
	}
	item := func(kv storage.KV) ([]byte, error) { return cachedItem(c.res, kv.Value, kv.Alt) }
	runKey := c.res.runKey("proto")
	apiVersion, kind := c.res.apiVersion(), c.res.listKind
	if out.form == formPartial {
		item = func(kv storage.KV) ([]byte, error) { return partialItem(kv.Value) }
		runKey = ""
		if itemsNum == 2 {
			runKey = "proto partial"
		}
		apiVersion, kind = out.metaAPIVersion(), "PartialObjectMetadataList"
	}
	// A run's memo keeps its objects' protobuf compressed: encoding them
	// for it does not keep each object's bytes in the cache as well
	// (~0.4 KiB per ConfigMap of the bench's), unless a list or watch
	// already did.
	runItem := func(kv storage.KV) ([]byte, error) {
		if b, ok := kv.Alt.Peek(); ok {
			return b, nil
		}
		return protoItem(c.res, kv.Value)
	}
	if out.form == formPartial {
		runItem = nil
	}
	// The envelope's length field grows with the items: a length of 0
	// gives the least the response can be.
	overhead := len(envelopeHead(apiVersion, kind, 0)) + len(lm) + len(envelopeTail)
	sp, err := c.spliceItems(page, itemForm{key: runKey, framed: true, item: item, runItem: runItem}, int64(overhead))
	if err != nil {
		return err
	}
	if sp != nil {
		head := append(envelopeHead(apiVersion, kind, len(lm)+int(sp.size)), lm...)
		if c.sendSpliced(sp, mediaProto, head, envelopeTail) {
			return nil
		}
	}
	raws := make([][]byte, len(items))
	n := len(lm)
	for i, kv := range items {
		raw, err := item(kv)
		if err != nil {
			return c.badStored(kv.Key, err)
		}
		raws[i] = raw
		n += fieldLen(len(raw))
	}
	c.w.Header().Set("Content-Type", mediaProto)
	c.w.WriteHeader(http.StatusOK)
	bw := listWriter(c.w)
	defer bw.release()
	bw.Write(envelopeHead(apiVersion, kind, n))
	if metaNum == 1 {
		bw.Write(lm)
	}
	var hdr []byte
	for _, raw := range raws {
		hdr = appendVarint(append(hdr[:0], byte(itemsNum<<3|2)), uint64(len(raw)))
		bw.Write(hdr)
		if _, err := bw.Write(raw); err != nil {
			return nil // the client went away
		}
	}
	if metaNum != 1 {
		bw.Write(lm)
	}
	bw.Write(envelopeTail)
	_ = bw.Flush()
	c.tr.Step("Writing http response done", slog.Int("count", len(items)))
	return nil
}

// objectFrame frames an event of type typ whose object (of the watch's
// resource) is raw, in the buffer alloc gives for its length.
func (ew *eventWriter) objectFrame(alloc func(n int) *[]byte, typ wire.EventType, raw []byte) *[]byte {
	apiVersion := ew.res.apiVersion()
	bp := alloc(protoEventFrameLen(typ, apiVersion, ew.res.kind, len(raw)))
	*bp = appendProtoEventFrame(*bp, typ, apiVersion, ew.res.kind, raw)
	return bp
}

// writeProto sends ev, which the client gets (write), as a protobuf watch
// frame. A change's frame comes
// from the event's memo when the watch cache sent it: built once, by the
// first watcher asking protobuf, from the object's cached message.
func (ew *eventWriter) writeProto(ev storage.WatchEvent) bool {
	var frame []byte
	var err error
	switch {
	case ev.Type == wire.Bookmark:
		var obj []byte
		partial := ""
		if ew.out.form == formPartial {
			partial = ew.out.metaAPIVersion()
		}
		obj, err = protoBookmark(ew.res, fmt.Sprint(ev.Revision), ev.InitialEventsEnd, partial)
		frame = protoWatchFrame(ev.Type, obj)
	case ew.out.form == formPartial:
		var raw []byte
		if raw, err = partialItem(ev.Object); err == nil {
			frame = protoWatchFrame(ev.Type, envelope(ew.out.metaAPIVersion(), "PartialObjectMetadata", raw))
		}
	case ev.FrameAlt == nil:
		// A frame no other watcher gets (an initial event): framed in a
		// pooled buffer, not kept.
		var raw []byte
		if raw, err = cachedItem(ew.res, ev.Object, ev.ObjectAlt); err != nil {
			break
		}
		return ew.framed(ew.objectFrame(ew.grow, ev.Type, raw))
	default:
		frame, err = ev.FrameAlt.Get(func() ([]byte, error) {
			raw, err := cachedItem(ew.res, ev.Object, ev.ObjectAlt)
			if err != nil {
				return nil, err
			}
			return *ew.objectFrame(newFrameBuf, ev.Type, raw), nil
		})
	}
	if err != nil {
		ew.writeError(wire.NewInternalError(err))
		return false
	}
	return ew.raw(frame)
}
