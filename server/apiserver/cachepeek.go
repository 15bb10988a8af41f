package apiserver

import "github.com/listwatch/listwatch/server/storage"

var _ storage.Peeker = (*cachedReader)(nil)

// Peek implements storage.Peeker from the resource's watch cache, when it
// is running and ready.
func (r *cachedReader) Peek(key string) (storage.KV, bool) {
	if c := r.get(); c != nil {
		return c.Peek(key)
	}
	return storage.KV{}, false
}
