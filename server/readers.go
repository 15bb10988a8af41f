package server

import (
	"strings"

	"github.com/listwatch/listwatch/server/storage"
)

// Readers opens the reader of one stored resource: the watch cache of its
// prefix, or a reader shared by all. The registry owns what it opens: it
// opens a resource's reader when it registers the resource (at New for
// the built-ins, when a CRD becomes served), opens a new one and closes
// the old when the resource's definition changes (selectable fields,
// scope, served versions), and closes it when the resource goes away.
// Requests ask the registry for the resource, and so for its reader, when
// they arrive.
type Readers interface {
	// Open returns the reader of the objects under spec.Prefix. It
	// starts nothing that Close does not stop.
	Open(spec ReaderSpec) ResourceReader
}

// ReaderSpec is what a resource's reader needs to know about it.
type ReaderSpec struct {
	// Prefix is the storage prefix of all the resource's objects, as
	// "/registry/pods/" or "/registry/example.com/widgets/".
	Prefix string
	// Resource names it in metrics and logs, as "pods" or
	// "example.com/widgets".
	Resource string
	// Attrs extracts labels and the resource's selectable fields from a
	// stored value; nil means storage.DefaultAttrs (metadata only).
	Attrs storage.AttrFunc
}

// ResourceReader serves LIST and WATCH of one resource's objects.
type ResourceReader interface {
	storage.ListWatcher
	// Close releases what the reader holds (a cache's objects, its etcd
	// watch and goroutines) and returns once they are gone. Open watches
	// end cleanly; reads after Close are still answered, from storage.
	// Close may be called more than once.
	Close()
}

// sharedReaders hands every resource the same reader: the direct reader
// of --disable-watch-cache, or a Config.Reader its maker runs.
type sharedReaders struct{ r storage.ListWatcher }

func (s sharedReaders) Open(ReaderSpec) ResourceReader { return sharedReader{s.r} }

type sharedReader struct{ storage.ListWatcher }

func (sharedReader) Close() {}

// readerSpec is the spec of the reader of resources stored under prefix
// whose selectable fields (beyond metadata.name and metadata.namespace)
// are fields (their values when missing from an object in absent).
func readerSpec(prefix string, fields map[string][]string, absent map[string]string) ReaderSpec {
	spec := ReaderSpec{Prefix: prefix, Resource: strings.Trim(strings.TrimPrefix(prefix, "/registry/"), "/")}
	if len(fields) > 0 {
		spec.Attrs = attrFunc(fields, absent)
	}
	return spec
}
