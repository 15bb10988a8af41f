package server

import "net/http"

// get answers GET on one object, straight from storage (a linearizable
// read, as kube serves a GET without resourceVersion).
func (c *call) get() error {
	if c.scale {
		return c.getScale()
	}
	kv, err := c.s.store.Get(c.r.Context(), c.res.key(c.ns, c.name))
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
	}
	return c.writeObject(http.StatusOK, value)
}
