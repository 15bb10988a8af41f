package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// get answers GET on one object, as kube's: straight from storage (a
// linearizable read) without resourceVersion or at "0" (where kube's
// watch cache may answer an older state: the newest is as valid); at N,
// a state not older than N, which the reader waits for (kube's 504 "Too
// large resource version" if it does not come).
func (c *call) get() error {
	opts, err := getOptions(c)
	if err != nil {
		return err
	}
	if err := c.keyError(c.name); err != nil {
		return err
	}
	if c.scale {
		return c.getScale()
	}
	var kv storage.KV
	if opts.ResourceVersion == "" {
		kv, err = c.s.store.Get(c.r.Context(), c.res.key(c.ns, c.name))
	} else {
		kv, err = c.getAt(opts.ResourceVersion)
	}
	c.tr.Step("About to write a response")
	if err != nil {
		return storageError(err, c.res, c.name)
	}
	value := kv.Value
	if c.res.conv != nil {
		// As kube's GET, which converts what it reads from storage each
		// time (crconvert.go).
		if value, err = c.res.conv.fresh(kv.Key, kv.Revision, kv.Value, c.res.apiVersion()); err != nil {
			return readError(err)
		}
		c.readDone = true
	}
	return c.writeObject(http.StatusOK, value)
}

// getOptions decodes a GET's query as kube's handler does: the export
// parameter refused, then GetOptions by kube's parameter codec.
func getOptions(c *call) (*metav1.GetOptions, error) {
	q := c.r.URL.Query()
	opts := &metav1.GetOptions{}
	if len(q) == 0 {
		return opts, nil
	}
	if ex := q["export"]; len(ex) > 0 {
		export := true
		if err := runtime.Convert_Slice_string_To_bool(&ex, &export, nil); err != nil {
			return nil, wire.NewBadRequest(fmt.Sprintf("the export parameter cannot be parsed: %v", err))
		}
		if export {
			return nil, wire.NewBadRequest("the export parameter, deprecated since v1.14, is no longer supported")
		}
	}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, opts); err != nil {
		return nil, wire.NewBadRequest(err.Error())
	}
	return opts, nil
}

// getAt reads the object at resourceVersion rv as kube's watch cache
// does: one that parses to 0 ("0", "00") is any state, so storage's
// newest; N a state not older than N, through the reader that serves
// lists (the watch cache waits for N); one its versioner does not parse
// is a 500.
func (c *call) getAt(rv string) (storage.KV, error) {
	n, err := strconv.ParseUint(rv, 10, 64)
	switch {
	case err != nil:
		return storage.KV{}, plainError(fmt.Errorf("resourceVersion: Invalid value: %q: %v", rv, err))
	case n == 0:
		return c.s.store.Get(c.r.Context(), c.res.key(c.ns, c.name))
	case n > math.MaxInt64:
		return storage.KV{}, c.beyondRV(n)
	}
	key := c.res.key(c.ns, c.name)
	page, err := c.res.reader.GetList(c.r.Context(), key, storage.GetListOptions{
		Mode: storage.ReadNotOlderThan, Revision: int64(n),
		Predicate: storage.Predicate{Field: object.FieldSelectorFromSet(map[string]string{"metadata.name": c.name})},
	})
	if err != nil {
		return storage.KV{}, err
	}
	for _, kv := range page.Items {
		if kv.Key == key {
			return kv, nil
		}
	}
	return storage.KV{}, storage.ErrNotFound
}

// beyondRV is the answer to a read at resourceVersion n past the largest
// int64 (storage.ReadSpec.Beyond): a revision no store reaches, so kube's
// watch cache waits for it in vain and answers its 504 "Too large
// resource version"; serve answers it without waiting.
func (c *call) beyondRV(n uint64) error {
	cur, err := c.s.store.CurrentRevision(c.r.Context())
	if err != nil {
		return err
	}
	st := tooLargeRV(storage.ErrTooLargeResourceVersion)
	st.Message = fmt.Sprintf("Timeout: Too large resource version: %d, current: %d", n, cur)
	return st
}
