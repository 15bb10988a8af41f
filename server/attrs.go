package server

import "github.com/listwatch/listwatch/storage"

// AttrsFor returns how to extract the labels and selectable fields of the
// objects stored under resourcePrefix (as "/registry/pods/"), for a watch
// cache that indexes them once per object. It returns nil, meaning
// storage.DefaultAttrs, for resources that select on metadata only and
// for prefixes no served resource has.
func (s *Server) AttrsFor(resourcePrefix string) storage.AttrFunc {
	for _, r := range s.reg.all() {
		if r.prefix("") == resourcePrefix && len(r.fields) > 0 {
			return attrFunc(r)
		}
	}
	return nil
}

// Ready is closed once Run has created the default namespaces and loaded
// the CRDs: from then on the server answers like a fresh kube-apiserver.
func (s *Server) Ready() <-chan struct{} { return s.booted }
