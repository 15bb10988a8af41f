package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// CRD conversion webhooks. A CRD whose spec.conversion.strategy is
// Webhook converts its objects between versions by calling the webhook,
// with kube's own converter (k8s.io/apiextensions-apiserver's
// CRConverterFactory): the ConversionReview version the CRD asks for, its
// checks of the answer (uid, count, apiVersion and kind, metadata the
// webhook may not change) and its errors.
//
// As in kube, objects are stored in the CRD's storage version: a write
// in another version is converted before it is stored, and its answer is
// the stored object converted back. A read in a version other than the
// stored object's is converted on the way out. kube-apiserver keeps one
// watch cache per served version, each converting every object once, as
// it arrives; serve keeps one cache of stored objects and converts when
// an object is first read in another version, then keeps the result
// (convMemo) while that revision of the object is read: every watcher of
// an event, every list after the first, shares one conversion, and a list
// page's objects go to the webhook in one ConversionReview.

// crConversion converts the objects of one CRD through its webhook.
type crConversion struct {
	// unresolved: the converter could not be made, so kube's crdHandler
	// has no serving info for the CRD and answers every request for its
	// resources with a 500 (customRoute).
	unresolved bool
	convertor  runtime.ObjectConvertor // kube's crConverter (unsafe: may change what it is given)
	// safe is the same converter on copies, for the field manager, which
	// converts the object to each manager's version as kube's does.
	safe runtime.ObjectConvertor
	// storage is the apiVersion objects are stored in; prune prunes an
	// object converted to it with that version's schema, as kube's
	// storage encoder does (nil without a schema).
	storage string
	prune   func(map[string]any) error
	// schemas are the CRD's versions' schemas by name (absent: none),
	// by which kube's storage decoder reads a stored object (readSchema).
	schemas map[string]*crSchema
	memo    convMemo
	// err, when set, is why the converter could not be made: every
	// conversion fails with it.
	err error
}

// newCRConversion returns the conversion of crd's objects, nil when its
// strategy is not Webhook (None relabels, resource.relabel).
func (s *Server) newCRConversion(crd *apiextensionsv1.CustomResourceDefinition) (*crConversion, error) {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter || crd.Spec.Conversion.Webhook == nil {
		return nil, nil
	}
	f, err := s.converterFactory()
	if err != nil {
		return nil, err
	}
	safe, unsafe, err := f.NewConverter(crd)
	if err != nil {
		return nil, err
	}
	storage := schema.GroupVersion{Group: crd.Spec.Group, Version: storageVersion(crd)}
	return &crConversion{convertor: unsafe, safe: safe, storage: storage.String()}, nil
}

// converterFactory is the server's CRConverterFactory, made once. Services
// a webhook names are resolved as the admission webhooks resolve them
// (their endpoints), once EnableWebhooks has run.
func (s *Server) converterFactory() (*conversion.CRConverterFactory, error) {
	s.convOnce.Do(func() {
		s.convFactory, s.convErr = conversion.NewCRConverterFactory(serverResolver{s}, nil)
	})
	return s.convFactory, s.convErr
}

// serverResolver resolves a webhook's service with the admission
// webhooks' resolver.
type serverResolver struct{ s *Server }

func (r serverResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if r.s.webhooks == nil {
		return nil, fmt.Errorf("service %s/%s: no service resolver (webhooks are not enabled)", namespace, name)
	}
	return r.s.webhooks.resolver.ResolveEndpoint(namespace, name, port)
}

// convItem is one object to convert: its key and revision (which, with
// the version, name a conversion convMemo keeps; key "" is not kept) and
// its stored value.
type convItem struct {
	key   string
	rev   int64
	value []byte
	// fresh: converted by the webhook whatever the memo holds.
	fresh bool
}

// convert returns the items' values, stored objects, in apiVersion as
// kube's storage decoder reads them: pruned and defaulted by the schema of
// the version each is stored in, then (those in another version)
// converted, by the webhook in one review or from the memo, and pruned by
// apiVersion's schema, without its defaults. An error is kube's: the
// webhook's failure, wrapped as an internal error.
func (cv *crConversion) convert(items []convItem, apiVersion string) ([][]byte, error) {
	return cv.convertAs(items, apiVersion, true)
}

// convertAs is convert, or with read false, the storage encoder's
// conversion of objects to be written: those already in apiVersion as
// they are, the others converted and pruned by apiVersion's schema.
func (cv *crConversion) convertAs(items []convItem, apiVersion string, read bool) ([][]byte, error) {
	if cv.err != nil {
		for _, it := range items {
			if valueAPIVersion(it.value) != apiVersion {
				return nil, cv.err
			}
		}
	}
	out := make([][]byte, len(items))
	var (
		mine    []int         // indexes this call converts
		flights []*convFlight // theirs, when mine
		waits   map[int]*convFlight
	)
	for i, it := range items {
		if valueAPIVersion(it.value) == apiVersion {
			out[i] = it.value
			if read {
				out[i] = cv.readSchema(it.value).readStored(it.value)
			}
			continue
		}
		var (
			b   []byte
			f   *convFlight
			own bool
		)
		if !it.fresh {
			b, f, own = cv.memo.claim(convKey{key: it.key, rev: it.rev, version: apiVersion})
		}
		switch {
		case b != nil:
			out[i] = b
		case own:
			mine = append(mine, i)
			flights = append(flights, f)
		case f != nil:
			if waits == nil {
				waits = map[int]*convFlight{}
			}
			waits[i] = f
		default: // not kept
			mine = append(mine, i)
			flights = append(flights, nil)
		}
	}
	if len(mine) > 0 {
		values := make([][]byte, len(mine))
		for j, i := range mine {
			values[j] = items[i].value
		}
		converted, err := cv.convertChunks(values, apiVersion, read, func() {
			// A conversion that panicked: its flights end with an error,
			// so that no reader of these objects waits for ever.
			for j, i := range mine {
				if flights[j] != nil {
					cv.memo.land(convKey{key: items[i].key, rev: items[i].rev, version: apiVersion}, flights[j], nil, errConversionPanicked)
				}
			}
		})
		if err != nil {
			failed := make([]convItem, len(mine))
			for j, i := range mine {
				failed[j] = convItem{key: items[i].key, rev: items[i].rev}
			}
			err = &convError{err: err, items: failed}
		}
		for j, i := range mine {
			var b []byte
			if err == nil {
				b = converted[j]
				out[i] = b
			}
			if flights[j] != nil {
				cv.memo.land(convKey{key: items[i].key, rev: items[i].rev, version: apiVersion}, flights[j], b, err)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	for i, f := range waits {
		<-f.done
		if f.err != nil {
			var ce *convError
			if errors.As(f.err, &ce) {
				return nil, &convError{err: ce.err, items: []convItem{{key: items[i].key, rev: items[i].rev}}}
			}
			return nil, f.err
		}
		out[i] = f.value
	}
	return out, nil
}

// convError is a conversion that failed (the webhook's error, as kube's
// converter words it) and the stored objects it was for.
type convError struct {
	err   error
	items []convItem // key and rev only
}

func (e *convError) Error() string { return e.err.Error() }
func (e *convError) Unwrap() error { return e.err }

// corruptObject is how kube's storage words an object it read but could
// not decode (its conversion to the version read failed): key as
// storage's StorageError names it.
func corruptObject(key string, rev int64, err error) string {
	return fmt.Sprintf("StorageError: corrupt object, Code: 7, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=%d: %v",
		key, rev, err)
}

// readError is kube's answer to a read of one object whose conversion
// failed: an internal error naming the object as storage holds it
// (kube's key there is relative to the storage prefix).
func readError(err error) error {
	var ce *convError
	if !errors.As(err, &ce) || len(ce.items) == 0 {
		return err
	}
	it := ce.items[0]
	return wire.NewInternalError(errors.New(corruptObject(strings.TrimPrefix(it.key, "/registry"), it.rev, ce.err)))
}

// listReadError is kube's answer to a list whose objects did not all
// convert: StorageReadError, a cause per object, the first in the
// message.
func listReadError(gr wire.GroupResource, err error) error {
	var ce *convError
	if !errors.As(err, &ce) || len(ce.items) == 0 {
		return err
	}
	st := &wire.Status{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: wire.StatusFailure,
		Code: 500, Reason: wire.ReasonStoreReadError,
		Details: &wire.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: "list"}}
	for _, it := range ce.items {
		msg := corruptObject(it.key, it.rev, ce.err)
		st.Details.Causes = append(st.Details.Causes, wire.StatusCause{Type: "UnexpectedServerResponse", Field: it.key, Message: msg})
	}
	st.Message = "failed to read one or more " + gr.String() + " from the storage: " + st.Details.Causes[0].Message
	if n := len(ce.items); n > 1 {
		st.Message += fmt.Sprintf(" (and %d more)", n-1)
	}
	return st
}

// updateReadError is kube's answer to an update whose stored object (at
// rev) did not convert to the request's version: its store's decode
// error, not a Status, answered as a 500 with no reason.
func updateReadError(err error, rev int64) error {
	var ce *convError
	if !errors.As(err, &ce) {
		return err
	}
	return &wire.Status{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: wire.StatusFailure,
		Code: 500, Message: fmt.Sprintf("object not decodable revision=%d: %v", rev, ce.err)}
}

// sameObject reports whether value, an update's object converted to the
// storage version, is the stored kv's object: the same JSON, whatever the
// order of its keys (a conversion writes them sorted, a client may not
// have), as kube compares what it would write with what is stored.
func sameObject(value []byte, kv storage.KV) bool {
	withRV, err := storage.WithResourceVersion(value, kv.Revision)
	if err != nil {
		return false
	}
	var a, b any
	if json.Unmarshal(withRV, &a) != nil || json.Unmarshal(kv.Value, &b) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(a, b)
}

// convWriteError is kube's answer to a write whose object did not convert to
// the storage version: the converter's error, not a Status, which kube's
// handler answers as a 500 with no reason.
func convWriteError(err error) error {
	var ce *convError
	if !errors.As(err, &ce) {
		return err
	}
	return &wire.Status{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: wire.StatusFailure,
		Code: 500, Message: ce.err.Error()}
}

// errConversionPanicked ends the flights of a conversion that panicked.
var errConversionPanicked = errors.New("server: the conversion panicked")

// convBatch is the most objects one ConversionReview carries.
const convBatch = 100

// convertChunks converts values in reviews of at most convBatch objects.
// onPanic runs if a conversion panics, before the panic goes on.
func (cv *crConversion) convertChunks(values [][]byte, apiVersion string, read bool, onPanic func()) (out [][]byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			onPanic()
			panic(p)
		}
	}()
	out = make([][]byte, 0, len(values))
	for len(values) > 0 {
		n := min(len(values), convBatch)
		got, err := cv.convertValues(values[:n], apiVersion, read)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		values = values[n:]
	}
	return out, nil
}

// convertValues sends values to the webhook in one ConversionReview and
// returns them in apiVersion, in order. One value is sent as itself, as
// kube sends every object; several as a list of the first one's version.
// With read (stored values), each is first pruned and defaulted by the
// schema of its own version, and each converted one pruned by
// apiVersion's, as kube's storage decoder does (its schemaCoercingDecoder
// and defaulter, then its schemaCoercingConverter); without, only the one
// converted to the storage version is pruned, as its encoder does.
func (cv *crConversion) convertValues(values [][]byte, apiVersion string, read bool) ([][]byte, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	items := make([]unstructured.Unstructured, len(values))
	for i, v := range values {
		if err := items[i].UnmarshalJSON(v); err != nil {
			return nil, wire.NewInternalError(err)
		}
		if read {
			if _, err := cv.readSchema(v).coerce(items[i].Object); err != nil {
				return nil, wire.NewInternalError(err)
			}
		}
	}
	var in runtime.Object = &items[0]
	if len(items) > 1 {
		in = &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": items[0].GetAPIVersion(), "kind": items[0].GetKind() + "List"}, Items: items}
	}
	got, err := cv.convertor.ConvertToVersion(in, gv)
	if err != nil {
		if len(items) > 1 {
			// kube converts each object alone: its error names the
			// object's kind, not the list's.
			kind := items[0].GetKind()
			return nil, errors.New(strings.Replace(err.Error(), ", Kind="+kind+"List ", ", Kind="+kind+" ", 1))
		}
		return nil, err
	}
	switch c := got.(type) {
	case *unstructured.Unstructured:
		items = []unstructured.Unstructured{*c}
	case *unstructured.UnstructuredList:
		items = c.Items
	default:
		items = nil
	}
	if len(items) != len(values) {
		return nil, wire.NewInternalError(errors.New("conversion webhook: unexpected result"))
	}
	out := make([][]byte, len(values))
	for i := range items {
		obj := items[i].Object
		switch {
		case read:
			if _, err := cv.schemaOf(gv.Version).prune(obj); err != nil {
				return nil, wire.NewInternalError(err)
			}
		case apiVersion == cv.storage && cv.prune != nil:
			if err := cv.prune(obj); err != nil {
				return nil, wire.NewInternalError(err)
			}
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, wire.NewInternalError(err)
		}
		// In the server's canonical form (apiVersion, kind, metadata
		// first), so that a stored value is the same bytes each time the
		// same object is converted to it.
		d, err := decodeDoc(b)
		if err != nil {
			return nil, wire.NewInternalError(err)
		}
		out[i] = d.encodeWithRV(d.metaString("resourceVersion"))
	}
	return out, nil
}

// one converts a single value (key and rev name it for the memo; key ""
// for an object not stored yet).
func (cv *crConversion) one(key string, rev int64, value []byte, apiVersion string) ([]byte, error) {
	out, err := cv.convert([]convItem{{key: key, rev: rev, value: value}}, apiVersion)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// toStorage is value, an object of r to be written, in the version it is
// stored in: converted by the CRD's webhook when it has one and value is
// in another version, as kube's storage encodes it.
//
// Under conversion None, a value in another version than the storage
// version is relabelled to it and pruned by its schema (not defaulted),
// as kube's storage encoder converts it with its nopConverter and its
// schemaCoercingConverter.
func (r *resource) toStorage(value []byte) ([]byte, error) {
	out, err := r.toStorageVersion(value)
	if err != nil || r.crd == "" {
		return out, err
	}
	// kube stores a custom resource as encoding/json of its unstructured
	// map: every object's keys in order.
	return keyOrdered(out), nil
}

// toStorageVersion is value, an object to write, in the storage version
// (toStorage, before a custom resource's keys are put in order).
func (r *resource) toStorageVersion(value []byte) ([]byte, error) {
	if r.conv == nil {
		if r.storageAPIVersion == "" || valueAPIVersion(value) == r.storageAPIVersion {
			return value, nil
		}
		return r.relabelToStorage(value)
	}
	out, err := r.conv.convertAs([]convItem{{value: value}}, r.conv.storage, false)
	if err != nil {
		return nil, convWriteError(err)
	}
	return out[0], nil
}

// schemaOf is the schema of version v of the CRD, by which kube's storage
// codec coerces an object in it: one the CRD does not have keeps only
// apiVersion, kind and metadata.
func (cv *crConversion) schemaOf(v string) *crSchema {
	if cs := cv.schemas[v]; cs != nil {
		return cs
	}
	return &crSchema{}
}

// readSchema is the schema of the version value, a stored object, is in.
func (cv *crConversion) readSchema(value []byte) *crSchema {
	gv, err := schema.ParseGroupVersion(valueAPIVersion(value))
	if err != nil {
		return &crSchema{}
	}
	return cv.schemaOf(gv.Version)
}

// servedValue is value, a stored object of r (with its resourceVersion),
// as r's version serves it, named for the memo by its key and
// resourceVersion read from it.
func (r *resource) servedValue(value []byte) ([]byte, error) {
	if r.conv == nil {
		return r.relabel(value), nil
	}
	key, rev := r.memoName(value)
	return r.served(key, rev, value)
}

// servedWritten is value, what the call stored or read, as its version
// serves it; a dry run's is not a stored revision, though it may carry
// one's resourceVersion, and is not kept with their conversions.
func (c *call) servedWritten(value []byte) ([]byte, error) {
	if c.readDone {
		return value, nil
	}
	if isDryRun(c.r) {
		return c.res.servedAnswer(value)
	}
	return c.res.servedValue(value)
}

// servedAnswer is servedValue for an answer that is not a stored
// revision, though it may carry one's resourceVersion (a dry run's):
// converted each time, not kept.
func (r *resource) servedAnswer(value []byte) ([]byte, error) {
	if r.conv == nil {
		return r.relabel(value), nil
	}
	key, rev := r.memoName(value)
	v, err := r.conv.fresh(key, rev, value, r.apiVersion())
	if err != nil {
		return nil, readError(err)
	}
	return r.relabel(v), nil
}

// memoName is the storage key and revision of a stored value of r (with
// its resourceVersion), read from it; "" when it names neither.
func (r *resource) memoName(value []byte) (string, int64) {
	var m struct {
		Metadata struct {
			Namespace       string `json:"namespace"`
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(value, &m) != nil || m.Metadata.Name == "" {
		return "", 0
	}
	n, err := strconv.ParseInt(m.Metadata.ResourceVersion, 10, 64)
	if err != nil || n <= 0 {
		return "", 0
	}
	return r.key(m.Metadata.Namespace, m.Metadata.Name), n
}

// validateDeleteOf runs the validating admission of a delete of kv (cur,
// decoded) with the object in the request's version, as kube's store
// reads it.
func (c *call) validateDeleteOf(kv storage.KV, cur *doc, name string) error {
	if c.res.conv != nil {
		// kube's store decodes what it read each time.
		v, err := c.res.conv.fresh(kv.Key, kv.Revision, kv.Value, c.res.apiVersion())
		if err != nil {
			return readError(err)
		}
		if cur, err = decodeDoc(v); err != nil {
			return wire.NewInternalError(err)
		}
	}
	return c.validateDelete(cur, name)
}

// fresh converts a stored value by the webhook, whatever the memo holds,
// as kube converts what a GET reads from storage each time.
func (cv *crConversion) fresh(key string, rev int64, value []byte, apiVersion string) ([]byte, error) {
	out, err := cv.convert([]convItem{{key: key, rev: rev, value: value, fresh: true}}, apiVersion)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// preconvert converts the objects of events together, for the memo that
// servedValue then reads. It returns which event's conversion failed
// first (-1: none) and kube's error for it; the events before it were
// converted or need no conversion.
func (r *resource) preconvert(events []storage.WatchEvent) (int, error) {
	items := make([]convItem, 0, len(events))
	at := make([]int, 0, len(events)) // the event of each item
	for i, ev := range events {
		if ev.Object == nil || valueAPIVersion(ev.Object) == r.apiVersion() {
			continue
		}
		if key, rev := r.memoName(ev.Object); key != "" {
			items = append(items, convItem{key: key, rev: rev, value: ev.Object})
			at = append(at, i)
		}
	}
	if len(items) < 2 {
		return -1, nil
	}
	_, err := r.conv.convert(items, r.apiVersion())
	var ce *convError
	if !errors.As(err, &ce) || len(ce.items) == 0 {
		return -1, nil
	}
	for j, it := range items {
		if it.key == ce.items[0].key && it.rev == ce.items[0].rev {
			return at[j], readError(err)
		}
	}
	return -1, nil
}

// convertKVs is a page of stored objects in apiVersion. The page's slice
// is the reader's and is not changed.
func (cv *crConversion) convertKVs(kvs []storage.KV, apiVersion string) ([]storage.KV, error) {
	items := make([]convItem, len(kvs))
	for i, kv := range kvs {
		items[i] = convItem{key: kv.Key, rev: kv.Revision, value: kv.Value}
	}
	values, err := cv.convert(items, apiVersion)
	if err != nil {
		return nil, err
	}
	out := make([]storage.KV, len(kvs))
	for i, kv := range kvs {
		kv.Value = values[i]
		out[i] = kv
	}
	return out, nil
}

// valueAPIVersion is a stored or encoded object's apiVersion: objects are
// written with it first (doc.encode), so it is read without a decode.
func valueAPIVersion(value []byte) string {
	const head = `{"apiVersion":"`
	if len(value) < len(head) || string(value[:len(head)]) != head {
		var tm struct {
			APIVersion string `json:"apiVersion"`
		}
		_ = json.Unmarshal(value, &tm)
		return tm.APIVersion
	}
	rest := value[len(head):]
	for i, c := range rest {
		if c == '"' {
			return string(rest[:i])
		}
		if c == '\\' {
			break
		}
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
	}
	_ = json.Unmarshal(value, &tm)
	return tm.APIVersion
}

// convKey names one conversion: an object's revision in a version.
type convKey struct {
	key     string
	rev     int64
	version string
}

// convFlight is a conversion under way: done is closed when value or err
// is set.
type convFlight struct {
	done  chan struct{}
	value []byte
	err   error
}

// convMemo keeps recent conversions, so that an object's revision is
// converted to a version once however many watchers and lists read it.
// It holds at most about 2×convMemoBytes: when the current generation
// fills, it becomes the old one and the old one is dropped; a hit in the
// old generation moves to the current one.
type convMemo struct {
	mu       sync.Mutex
	cur, old map[convKey][]byte
	curBytes int
	flights  map[convKey]*convFlight
}

const convMemoBytes = 32 << 20

// claim returns the kept conversion of k, or the flight converting it
// now (own: the caller's, who must land it). k without a key is never
// kept: claim returns nothing.
func (m *convMemo) claim(k convKey) (value []byte, f *convFlight, own bool) {
	if k.key == "" {
		return nil, nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.cur[k]; ok {
		return b, nil, false
	}
	if b, ok := m.old[k]; ok {
		m.keepLocked(k, b)
		return b, nil, false
	}
	if f, ok := m.flights[k]; ok {
		return nil, f, false
	}
	if m.flights == nil {
		m.flights = map[convKey]*convFlight{}
	}
	f = &convFlight{done: make(chan struct{})}
	m.flights[k] = f
	return nil, f, true
}

// land ends the flight f of k with its result, keeping a value.
func (m *convMemo) land(k convKey, f *convFlight, value []byte, err error) {
	m.mu.Lock()
	delete(m.flights, k)
	if err == nil {
		m.keepLocked(k, value)
	}
	m.mu.Unlock()
	f.value, f.err = value, err
	close(f.done)
}

func (m *convMemo) keepLocked(k convKey, b []byte) {
	if m.curBytes+len(b)+len(k.key) > convMemoBytes {
		m.old, m.cur, m.curBytes = m.cur, nil, 0
	}
	if m.cur == nil {
		m.cur = map[convKey][]byte{}
	}
	m.cur[k] = b
	m.curBytes += len(b) + len(k.key)
}

// relabelToStorage is value, an object of r in another version, in its
// CRD's storage version (conversion None): relabelled and pruned by the
// storage version's schema.
func (r *resource) relabelToStorage(value []byte) ([]byte, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(value); err != nil {
		return nil, wire.NewInternalError(err)
	}
	gv, err := schema.ParseGroupVersion(r.storageAPIVersion)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	u.SetAPIVersion(r.storageAPIVersion)
	if _, err := r.storedSchema(gv.Version).prune(u.Object); err != nil {
		return nil, wire.NewInternalError(err)
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	// In the server's canonical form (apiVersion, kind, metadata first).
	d, err := decodeDoc(b)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	return d.encodeWithRV(d.metaString("resourceVersion")), nil
}
