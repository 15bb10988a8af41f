package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/listwatch/listwatch/internal/protomemo"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// Content negotiation. A Resource[T] whose T has the generated protobuf
// methods (every k8s.io/api type does) asks for protobuf the way
// client-go's typed clients do, and decodes whatever the server answers by
// its Content-Type: kube-apiserver answers protobuf for built-in kinds and
// JSON for custom resources, and so does listwatch serve (but for a few
// subresources, which it answers in JSON).
const (
	// acceptProtobuf is client-go's Accept for types that prefer protobuf,
	// on gets, lists and watches alike (rest.Request.UseProtobufAsDefault).
	acceptProtobuf = wire.ContentTypeProtobuf + ",application/json"
	acceptJSON     = "application/json"
)

// protoMessage is the method pair of a gogo-generated protobuf type.
type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// protoState is what a Resource and its Namespace copies learn about the
// server. A nil *protoState means JSON only.
type protoState struct {
	// serverSpeaks: the server answered protobuf for this resource, so
	// writes are sent as protobuf too. Until then writes are JSON, which
	// every server reads.
	serverSpeaks atomic.Bool
	// bodiesRefused: a protobuf body was answered 415; writes stay JSON.
	bodiesRefused atomic.Bool
	// typeMeta is the envelope's apiVersion and kind of a written object
	// whose own TypeMeta is empty, as far as the resource and T tell:
	// empty for a subresource, whose kind the resource does not say
	// (deployments/scale is autoscaling/v1 Scale).
	typeMeta wire.TypeMeta
	// answered is the apiVersion and kind of the first object the server
	// answered in protobuf (nil until then): what it reads too, and so the
	// envelope of writes, before typeMeta.
	answered atomic.Pointer[wire.TypeMeta]
}

// newProtoState returns the negotiation state of a Resource[T] of gvr, or
// nil when T has no protobuf methods or is not a pointer to a struct.
func newProtoState[T object.Object](gvr GroupVersionResource) *protoState {
	var zero T
	if _, ok := any(zero).(protoMessage); !ok {
		return nil
	}
	rt := reflect.TypeFor[T]()
	if rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
		return nil
	}
	apiVersion := gvr.Version
	if gvr.Group != "" {
		apiVersion = gvr.Group + "/" + gvr.Version
	}
	// The Go type's name is the kind: k8s.io/apimachinery's Scheme
	// registers every k8s.io/api type under its type name.
	return &protoState{typeMeta: wire.TypeMeta{APIVersion: apiVersion, Kind: rt.Elem().Name()}}
}

// JSONOnly returns a copy of r that asks for and sends JSON only, as a
// Config with DisableProtobuf does for every resource.
func (r *Resource[T]) JSONOnly() *Resource[T] {
	cp := *r
	cp.proto = nil
	return &cp
}

// accept is the Accept header of r's reads.
func (r *Resource[T]) accept() string {
	if r.proto == nil {
		return acceptJSON
	}
	return acceptProtobuf
}

// isProtobufResponse says whether resp's body is protobuf, by its
// Content-Type (parameters such as stream=watch aside).
func isProtobufResponse(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == wire.ContentTypeProtobuf
}

// newObject allocates the T a decode fills, as encoding/json does for a
// nil pointer: a new zero value of what T points to.
func newObject[T object.Object]() T {
	return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
}

// unmarshalObject decodes an enveloped object into a new T, with the
// envelope's apiVersion and kind in T's TypeMeta, as the JSON of a single
// object or a watch event carries them.
func unmarshalObject[T object.Object](data []byte) (T, error) {
	var zero T
	e, err := wire.DecodeEnvelope(data)
	if err != nil {
		return zero, err
	}
	obj, err := unmarshalRaw[T](e.Raw)
	if err != nil {
		return zero, err
	}
	setTypeMeta(obj, e.TypeMeta)
	return obj, nil
}

// typeMetaFields caches, per struct type, the index paths of its
// (promoted) APIVersion and Kind string fields; nil when it has none.
var typeMetaFields sync.Map // reflect.Type → *[2][]int

func typeMetaIndex(t reflect.Type) *[2][]int {
	if v, ok := typeMetaFields.Load(t); ok {
		return v.(*[2][]int)
	}
	var idx *[2][]int
	av, okA := t.FieldByName("APIVersion")
	k, okK := t.FieldByName("Kind")
	if okA && okK && av.Type.Kind() == reflect.String && k.Type.Kind() == reflect.String {
		idx = &[2][]int{av.Index, k.Index}
	}
	typeMetaFields.Store(t, idx)
	return idx
}

// setTypeMeta stores tm in obj's APIVersion and Kind fields, if it has
// them. obj is a non-nil pointer to a struct.
func setTypeMeta(obj any, tm wire.TypeMeta) {
	v := reflect.ValueOf(obj).Elem()
	idx := typeMetaIndex(v.Type())
	if idx == nil {
		return
	}
	v.FieldByIndex(idx[0]).SetString(tm.APIVersion)
	v.FieldByIndex(idx[1]).SetString(tm.Kind)
}

// getTypeMeta reads obj's APIVersion and Kind fields, if it has them.
func getTypeMeta(obj any) wire.TypeMeta {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return wire.TypeMeta{}
	}
	idx := typeMetaIndex(v.Elem().Type())
	if idx == nil {
		return wire.TypeMeta{}
	}
	return wire.TypeMeta{APIVersion: v.Elem().FieldByIndex(idx[0]).String(), Kind: v.Elem().FieldByIndex(idx[1]).String()}
}

// unmarshalRaw decodes an object's own protobuf bytes into a new T.
func unmarshalRaw[T object.Object](raw []byte) (T, error) { return decodeRaw[T](raw, nil) }

// decodeRaw is unmarshalRaw through memo, when there is one (see
// package protomemo).
func decodeRaw[T object.Object](raw []byte, memo *protomemo.Memo) (T, error) {
	var zero T
	obj := newObject[T]()
	m, ok := any(obj).(protoMessage)
	if !ok {
		return zero, fmt.Errorf("%w: %T cannot decode protobuf", wire.ErrProtobuf, obj)
	}
	var err error
	if memo != nil {
		err = memo.Decode(m, raw)
	} else {
		err = m.Unmarshal(raw)
	}
	if err != nil {
		return zero, fmt.Errorf("%w: %w", wire.ErrProtobuf, err)
	}
	return obj, nil
}

// readProtobuf reads a whole protobuf response body; it notes that the
// server speaks protobuf for r.
func (r *Resource[T]) readProtobuf(body io.Reader) ([]byte, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	if r.proto != nil {
		r.proto.serverSpeaks.Store(true)
	}
	return b, nil
}

// decodeProtobufObject decodes a protobuf answer to a get or a write, and
// notes the answer's kind. A Status where an object was expected (pods'
// eviction and binding answer one) is the zero T.
func (r *Resource[T]) decodeProtobufObject(body io.Reader, req request) (T, error) {
	var zero T
	b, err := r.readProtobuf(body)
	if err != nil {
		return zero, err
	}
	e, err := wire.DecodeEnvelope(b)
	if err == nil && isStatusKind(e.TypeMeta) {
		return zero, nil
	}
	var out T
	if err == nil {
		out, err = unmarshalRaw[T](e.Raw)
	}
	if err != nil {
		return zero, fmt.Errorf("client: decoding %s %s: %w", req.method, req.path, err)
	}
	setTypeMeta(out, e.TypeMeta)
	if p := r.proto; p != nil && e.TypeMeta.Kind != "" && p.answered.Load() == nil {
		tm := e.TypeMeta
		p.answered.Store(&tm)
	}
	return out, nil
}

// isStatusKind says whether tm is a meta/v1 Status's.
func isStatusKind(tm wire.TypeMeta) bool { return tm.APIVersion == "v1" && tm.Kind == "Status" }

// decodeProtobufList decodes a protobuf list page, each item into a new T,
// as the body arrives: the page's bytes are never held whole, only the
// item being decoded (a page of 100,000 ConfigMaps is 125 MiB).
func (r *Resource[T]) decodeProtobufList(body io.Reader) (*wire.List[T], error) {
	list := &wire.List[T]{Items: []T{}}
	var err error
	list.TypeMeta, list.Metadata, err = r.readProtobufItems(body, func(item T) error {
		list.Items = append(list.Items, item)
		return nil
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("client: decoding list of %s: %w", r.gvr, err)
	}
	return list, nil
}

// readProtobufItems reads a protobuf list page as it arrives and passes
// each item, decoded into a new T (on other goroutines when the page is
// large: itemDecoder), to item, in order; it notes that the server speaks
// protobuf for r. An error from item stops the read and is returned as is.
//
// With a memo (an informer's; see package protomemo) the items' parts
// that repeat are decoded once and shared between the items.
func (r *Resource[T]) readProtobufItems(body io.Reader, item func(T) error, memo *protomemo.Memo) (wire.TypeMeta, wire.ListMeta, error) {
	if r.proto != nil {
		r.proto.serverSpeaks.Store(true)
	}
	decode := unmarshalRaw[T]
	if memo != nil && protomemo.Supports(reflect.TypeFor[T]()) {
		decode = func(raw []byte) (T, error) { return decodeRaw[T](raw, memo) }
	}
	d := newItemDecoder(decode, item)
	defer d.stop() // also when item panics
	tm, lm, err := wire.ReadProtobufList(body, d.add)
	if err = d.finish(err); err != nil {
		return wire.TypeMeta{}, wire.ListMeta{}, err
	}
	return tm, lm, nil
}

// protobufStatus decodes an error answer in protobuf into st: its Status,
// or, when the body is not one, the Status synthesized from the HTTP code
// (rather than one whose message is binary). It reports false, leaving st
// alone, when the answer is not protobuf.
func protobufStatus(resp *http.Response, body []byte, st *wire.Status) bool {
	if !isProtobufResponse(resp.Header) {
		return false
	}
	p, err := wire.DecodeProtobufStatus(body)
	if err != nil {
		p = synthesizeStatus(resp.StatusCode, "", resp.Header.Get("Retry-After"))
	}
	*st = *p
	return true
}

// write sends a create or update of obj. It is protobuf once the server
// has answered r in protobuf (the server then reads protobuf too) and the
// envelope's kind is known, JSON otherwise. A protobuf body answered 415
// Unsupported Media Type, which the server rejected before acting on it,
// is sent again as JSON, and r writes JSON from then on.
func (r *Resource[T]) write(ctx context.Context, req request, obj T) (T, error) {
	var zero T
	if tm, ok := r.proto.envelopeOf(obj); ok {
		body, err := encodeProtobuf(obj, tm)
		if err != nil {
			return zero, fmt.Errorf("%w: encoding object: %w", ErrRequest, err)
		}
		pr := req
		pr.body, pr.contentType = body, wire.ContentTypeProtobuf
		out, err := r.doObject(ctx, pr)
		st, ok := statusOf(err)
		if !ok || st.Code != http.StatusUnsupportedMediaType {
			return out, err
		}
		r.proto.bodiesRefused.Store(true)
		r.c.log.DebugContext(ctx, "server refused a protobuf body, writing JSON", "resource", r.gvr.String())
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return zero, fmt.Errorf("%w: encoding object: %w", ErrRequest, err)
	}
	req.body = body
	return r.doObject(ctx, req)
}

// envelopeOf says whether obj is to be written in protobuf (p is nil for
// JSON only), and with which apiVersion and kind in the envelope: obj's
// own when its TypeMeta has them, else those of the server's answers,
// else the resource's group/version and T's kind. With none of them (a
// subresource the server has not answered yet) the write is JSON: a
// wrong kind would be refused, and only JSON's may be left out.
func (p *protoState) envelopeOf(obj any) (wire.TypeMeta, bool) {
	if p == nil || !p.serverSpeaks.Load() || p.bodiesRefused.Load() {
		return wire.TypeMeta{}, false
	}
	tm := p.typeMeta
	if a := p.answered.Load(); a != nil {
		tm = *a
	}
	own := getTypeMeta(obj)
	if own.APIVersion != "" {
		tm.APIVersion = own.APIVersion
	}
	if own.Kind != "" {
		tm.Kind = own.Kind
	}
	return tm, tm.APIVersion != "" && tm.Kind != ""
}

// encodeProtobuf envelopes obj's protobuf bytes with tm.
func encodeProtobuf(obj any, tm wire.TypeMeta) ([]byte, error) {
	m, ok := obj.(protoMessage)
	if !ok {
		return nil, errors.New("object has no protobuf encoding")
	}
	raw, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	return wire.AppendEnvelope(make([]byte, 0, len(raw)+len(tm.APIVersion)+len(tm.Kind)+16), tm, raw), nil
}
