package storage

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/wire"
)

// This file holds Kubernetes' rules for the read parameters of a LIST or a
// WATCH (resourceVersion, resourceVersionMatch, limit, continue,
// sendInitialEvents, allowWatchBookmarks) in one place. The server parses
// a request's query once into a ReadSpec, which either is valid or comes
// with kube's 400 or 422; the readers (the watch cache and the direct
// reader) switch on its Mode and never look at the strings again.

// ReadMode is which state of the store a read is served from.
type ReadMode uint8

const (
	// ReadMostRecent: resourceVersion unset. A state at least as new as
	// the store's current revision (a consistent read).
	ReadMostRecent ReadMode = iota
	// ReadAny: resourceVersion "0". Whatever state the reader holds.
	ReadAny
	// ReadNotOlderThan: a state at least at Revision. A LIST with
	// resourceVersionMatch=NotOlderThan, or with a resourceVersion and
	// neither a match nor a limit; a WATCH with sendInitialEvents=true.
	ReadNotOlderThan
	// ReadExact: the state at Revision exactly. A LIST with
	// resourceVersionMatch=Exact, or with a resourceVersion, no match and a
	// limit (and every continued page); a WATCH with a resourceVersion and
	// without initial events, whose events are the changes after Revision.
	ReadExact
)

var readModeNames = [...]string{"MostRecent", "Any", "NotOlderThan", "Exact"}

func (m ReadMode) String() string {
	if int(m) < len(readModeNames) {
		return readModeNames[m]
	}
	return fmt.Sprintf("ReadMode(%d)", uint8(m))
}

// ReadSpec is a LIST or WATCH request's read parameters, parsed and
// validated by ParseReadSpec.
type ReadSpec struct {
	// Watch is true for a WATCH.
	Watch bool
	// Mode and Revision say which state is read; Revision is positive for
	// ReadNotOlderThan and ReadExact, else 0.
	Mode     ReadMode
	Revision int64
	// Beyond is a resourceVersion past the largest int64, which kube's
	// versioner parses (an unsigned 64-bit number) but no store reaches:
	// Revision is then math.MaxInt64, and the server answers the wait
	// for it as kube's watch cache ends it (a 504 "Too large resource
	// version" naming Beyond).
	Beyond uint64
	// Limit caps a LIST's items; 0 means none.
	Limit int64
	// Continue is a LIST's continue token as sent (a WATCH drops it:
	// ParseWatchSpec); its revision overrides Mode (see
	// GetListOptions.Position). With it, Mode is ReadMostRecent or
	// ReadAny.
	Continue string
	// LabelSelector and FieldSelector are the selectors as sent; the
	// server compiles them for the resource into a Predicate.
	LabelSelector string
	FieldSelector string
	// AllowBookmarks, SendInitialEvents and TimeoutSeconds are a WATCH's.
	AllowBookmarks    bool
	SendInitialEvents *bool
	TimeoutSeconds    *int64
}

// ParseReadSpec parses and validates the query of a LIST or WATCH as
// kube-apiserver does. The error is a *wire.Status: a 400 BadRequest for
// bad syntax (a number, a selector, a continue token, a resourceVersion,
// or a resourceVersion with a continue token), a 422 Invalid about
// ListOptions.meta.k8s.io for a forbidden combination. The query is
// decoded by kube's own parameter codec, so that what it accepts (a
// negative limit is no limit, any boolean but "false" and "0" is true)
// and the messages of what it refuses are kube's.
func ParseReadSpec(q url.Values) (ReadSpec, error) {
	o, _, err := decodeListQuery(q)
	if err != nil {
		return ReadSpec{}, err
	}
	return SpecOf(o)
}

// DecodeDeleteCollectionOptions decodes and validates the query of a
// DELETE on a collection as kube-apiserver's handler does
// (handlers/delete.go DeleteCollection): as a LIST's, with its 400s and
// 422s. Its store then lists what it deletes
// (registry/generic/registry/store.go DeleteCollection): with the
// request's limit, the first page only (paged is true); without one
// (limit absent or 0, not a negative limit), every page of pageSize
// items. That pageSize limit makes a resourceVersion without
// resourceVersionMatch read that revision exactly, as it does a paged
// LIST's, where an unpaged LIST reads a state not older than it. SpecOf
// then reads the continue token and the resourceVersion, whose 400s come
// from kube's store, after the handler has read the DeleteOptions.
func DecodeDeleteCollectionOptions(q url.Values, pageSize int64) (o wire.ListOptions, paged bool, err error) {
	o, limit, err := decodeListQuery(q)
	if err != nil {
		return wire.ListOptions{}, false, err
	}
	if limit == 0 {
		o.Limit = pageSize
	}
	if o, err = validateListOptions(o); err != nil {
		return wire.ListOptions{}, false, err
	}
	return o, limit > 0, nil
}

// decodeListQuery decodes a LIST's query with kube's parameter codec;
// limit is the limit as decoded, before a negative one is taken as none.
func decodeListQuery(q url.Values) (o wire.ListOptions, limit int64, err error) {
	var ko metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &ko); err != nil {
		return wire.ListOptions{}, 0, wire.NewBadRequest(err.Error())
	}
	o = wire.ListOptions{
		LabelSelector:        q.Get("labelSelector"),
		FieldSelector:        q.Get("fieldSelector"),
		Watch:                ko.Watch,
		AllowWatchBookmarks:  ko.AllowWatchBookmarks,
		ResourceVersion:      ko.ResourceVersion,
		ResourceVersionMatch: string(ko.ResourceVersionMatch),
		TimeoutSeconds:       ko.TimeoutSeconds,
		Limit:                max(ko.Limit, 0),
		Continue:             ko.Continue,
		SendInitialEvents:    ko.SendInitialEvents,
	}
	return o, ko.Limit, nil
}

// SpecOf defaults and validates already decoded options as
// kube-apiserver's handler does, with kube's own functions, before the
// store looks at them: a WATCH from resourceVersion unset or "0" without
// sendInitialEvents or resourceVersionMatch becomes one with
// sendInitialEvents=true and NotOlderThan (kube 1.37's default, with
// WatchList on), so it ends its initial events with a bookmark when it
// allows bookmarks; a forbidden combination is kube's 422 about
// ListOptions.meta.k8s.io, before the continue token (then the
// resourceVersion) is read. See ParseReadSpec.
func SpecOf(o wire.ListOptions) (ReadSpec, error) {
	o, err := validateListOptions(o)
	if err != nil {
		return ReadSpec{}, err
	}
	s, err := validSpec(o)
	if rv, ok := err.(*InvalidResourceVersionError); ok {
		// kube's store's ValidateListOptions makes the versioner's
		// error a 400.
		return ReadSpec{}, wire.NewBadRequest("invalid resource version: " + rv.Error())
	}
	return s, err
}

// InvalidResourceVersionError is a resourceVersion kube's versioner does
// not parse (not an unsigned 64-bit decimal: "abc", "-1", "1.5",
// 18446744073709551616), with its error: a LIST's 400 (SpecOf), a
// WATCH's 500 (ParseWatchSpec; see Status).
type InvalidResourceVersionError struct {
	Value string
	Err   error
}

// Error is kube's versioner's message: its storage.InvalidError of one
// field error.
func (e *InvalidResourceVersionError) Error() string {
	return fmt.Sprintf("resourceVersion: Invalid value: %q: %v", e.Value, e.Err)
}

// Status is a WATCH's answer to e as kube-apiserver's: its cacher's
// Watch returns the versioner's error as it is, not an API status, so
// the handler answers a 500 with its message and no reason.
func (e *InvalidResourceVersionError) Status() *wire.Status {
	return &wire.Status{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: wire.StatusFailure,
		Code: http.StatusInternalServerError, Message: e.Error()}
}

// ParseWatchSpec parses and validates the query of a WATCH as
// kube-apiserver does. With watch=true it is ParseReadSpec's, but for a
// resourceVersion kube's versioner does not parse: that error is an
// *InvalidResourceVersionError, which kube's store finds only once the
// handler has read the selectors (its Status is kube's 500). On a
// deprecated /watch/ path without it the options are defaulted and
// validated as a LIST's, as kube's forceWatch does (no watch=1, so no
// defaults), but served as a watch: resourceVersion N is the changes
// after N, not a state not older than N. Either way the continue token
// is dropped unread, as kube's store's watch never reads it: one that
// does not decode, or beside a resourceVersion, is no error.
func ParseWatchSpec(q url.Values) (ReadSpec, error) {
	o, _, err := decodeListQuery(q)
	if err != nil {
		return ReadSpec{}, err
	}
	if o, err = validateListOptions(o); err != nil {
		return ReadSpec{}, err
	}
	o.Continue = ""
	s, err := validSpec(o)
	if err != nil || s.Watch {
		return s, err
	}
	s.Watch = true
	if s.Revision != 0 {
		s.Mode = revisionMode(wire.ListOptions{Watch: true, SendInitialEvents: s.SendInitialEvents})
	}
	if s.Mode == ReadMostRecent && o.ResourceVersion != "" {
		s.Mode = ReadAny // "00": a watch from any state, as "0"
	}
	return s, nil
}

// validSpec is the spec of options validateListOptions passed, as kube's
// store reads them.
func validSpec(o wire.ListOptions) (ReadSpec, error) {
	// kube's store decodes a list's continue token before it looks at the
	// resourceVersion, which it then refuses unparsed (but "0").
	if o.Continue != "" && !o.Watch {
		if err := decodeToken(o.Continue); err != nil {
			return ReadSpec{}, wire.NewBadRequest("invalid continue token: " + strings.TrimPrefix(err.Error(), ErrInvalidContinue.Error()+": "))
		}
		if o.ResourceVersion != "" && o.ResourceVersion != "0" {
			return ReadSpec{}, wire.NewBadRequest("specifying resource version is not allowed when using continue")
		}
	}
	s := ReadSpec{
		Watch:             o.Watch,
		Limit:             o.Limit,
		Continue:          o.Continue,
		LabelSelector:     o.LabelSelector,
		FieldSelector:     o.FieldSelector,
		AllowBookmarks:    o.AllowWatchBookmarks,
		SendInitialEvents: o.SendInitialEvents,
		TimeoutSeconds:    o.TimeoutSeconds,
	}
	switch o.ResourceVersion {
	case "":
		s.Mode = ReadMostRecent
	case "0":
		s.Mode = ReadAny
	default:
		// As kube's versioner: an unsigned decimal.
		n, err := strconv.ParseUint(o.ResourceVersion, 10, 64)
		if err != nil {
			// The spec so far, for the selectors a WATCH reads first.
			return s, &InvalidResourceVersionError{Value: o.ResourceVersion, Err: err}
		}
		if n == 0 {
			// "0" written otherwise ("00"): kube's versioner parses it
			// as 0, but its handler's defaults, its validation and its
			// cacher compare the string with "0", so it is not a
			// watch-list by default, nor refused with Exact, and a
			// limit is honoured. Its watch cache serves a state at
			// least as new as 0, any state, but for the reads it
			// passes to etcd, where revision 0 is the newest: an
			// Exact list, and a paged one without a match (kube's
			// legacy exact read).
			s.Mode = ReadAny
			if !o.Watch && (o.ResourceVersionMatch == wire.MatchExact || o.ResourceVersionMatch == "" && o.Limit > 0) {
				s.Mode = ReadMostRecent
			}
			return s, nil
		}
		if n > math.MaxInt64 {
			s.Beyond, n = n, math.MaxInt64
		}
		s.Revision = int64(n)
	}
	if s.Revision != 0 {
		s.Mode = revisionMode(o)
	}
	return s, nil
}

// validateListOptions defaults and validates o as kube-apiserver's
// handler does, with kube's own functions (see SpecOf): a forbidden
// combination is kube's 422 about ListOptions.meta.k8s.io.
func validateListOptions(o wire.ListOptions) (wire.ListOptions, error) {
	ko := metainternalversion.ListOptions{
		Watch:                o.Watch,
		AllowWatchBookmarks:  o.AllowWatchBookmarks,
		ResourceVersion:      o.ResourceVersion,
		ResourceVersionMatch: metav1.ResourceVersionMatch(o.ResourceVersionMatch),
		Continue:             o.Continue,
		SendInitialEvents:    o.SendInitialEvents,
	}
	metainternalversion.SetListOptionsDefaults(&ko, true)
	if errs := metainternalversionvalidation.ValidateListOptions(&ko, true); len(errs) > 0 {
		causes := make([]wire.StatusCause, 0, len(errs))
		for _, e := range errs {
			causes = append(causes, wire.StatusCause{Type: string(e.Type), Field: e.Field, Message: e.ErrorBody()})
		}
		st := wire.NewInvalid("meta.k8s.io", "ListOptions.meta.k8s.io", "", causes...)
		st.Details.Kind = "ListOptions"
		return o, st
	}
	o.SendInitialEvents, o.ResourceVersionMatch = ko.SendInitialEvents, string(ko.ResourceVersionMatch)
	return o, nil
}

// revisionMode is the mode of a valid request with resourceVersion N.
func revisionMode(o wire.ListOptions) ReadMode {
	if o.Watch {
		// Initial events are a state not older than N; without them the
		// watch starts exactly at N.
		if o.SendInitialEvents != nil && *o.SendInitialEvents {
			return ReadNotOlderThan
		}
		return ReadExact
	}
	switch o.ResourceVersionMatch {
	case wire.MatchExact:
		return ReadExact
	case wire.MatchNotOlderThan:
		return ReadNotOlderThan
	}
	// Legacy: a paged list at N is a snapshot at N.
	if o.Limit > 0 {
		return ReadExact
	}
	return ReadNotOlderThan
}

// Options is the request the spec describes, as wire options. Its query
// (Options().Query()) parses back to the same spec.
func (s ReadSpec) Options() wire.ListOptions {
	o := wire.ListOptions{
		LabelSelector:       s.LabelSelector,
		FieldSelector:       s.FieldSelector,
		Watch:               s.Watch,
		AllowWatchBookmarks: s.AllowBookmarks,
		TimeoutSeconds:      s.TimeoutSeconds,
		Limit:               s.Limit,
		Continue:            s.Continue,
		SendInitialEvents:   s.SendInitialEvents,
	}
	switch s.Mode {
	case ReadAny:
		o.ResourceVersion = "0"
		if s.Watch && s.SendInitialEvents == nil {
			// A watch from any state without sendInitialEvents: "0"
			// would be kube's watch-list default, "00" is not.
			o.ResourceVersion = "00"
		}
	case ReadNotOlderThan, ReadExact:
		o.ResourceVersion = strconv.FormatInt(s.Revision, 10)
		if s.Beyond != 0 {
			o.ResourceVersion = strconv.FormatUint(s.Beyond, 10)
		}
	}
	switch {
	case s.Watch:
		if s.SendInitialEvents != nil {
			o.ResourceVersionMatch = wire.MatchNotOlderThan
		}
	case s.Mode == ReadExact:
		o.ResourceVersionMatch = wire.MatchExact
	case s.Mode == ReadNotOlderThan:
		o.ResourceVersionMatch = wire.MatchNotOlderThan
	}
	return o
}

// ListOptions is what a LIST of the spec asks a ListWatcher for.
func (s ReadSpec) ListOptions(p Predicate) GetListOptions {
	return GetListOptions{Mode: s.Mode, Revision: s.Revision, Limit: s.Limit, Continue: s.Continue, Predicate: p}
}

// WatchOptions is what a WATCH of the spec asks a ListWatcher for.
func (s ReadSpec) WatchOptions(p Predicate) WatchOptions {
	return WatchOptions{Mode: s.Mode, Revision: s.Revision, SendInitialEvents: s.SendInitialEvents,
		AllowBookmarks: s.AllowBookmarks, Predicate: p}
}

// ListPosition is where a page of a LIST starts and which state it reads.
type ListPosition struct {
	Mode     ReadMode
	Revision int64
	// Start is the first key to read; "" for the prefix's first.
	Start string
	// Continued is true for a page after the first: a continue token set
	// Start, and Mode is ReadExact at the token's revision.
	Continued bool
}

// Position decodes the continue token, if any, against prefix, the one
// the list reads (a bad token fails with ErrInvalidContinue). Without a
// token it is the options' Mode and Revision.
func (o GetListOptions) Position(prefix string) (ListPosition, error) {
	if o.Continue == "" {
		return ListPosition{Mode: o.Mode, Revision: o.Revision}, nil
	}
	start, rev, err := DecodeContinue(o.Continue, prefix)
	if err != nil {
		return ListPosition{}, err
	}
	return ListPosition{Mode: ReadExact, Revision: rev, Start: start, Continued: true}, nil
}

// InitialEvents says whether a watch first sends the state it starts
// from as ADDED events, and whether it then sends the bookmark that ends
// them. As in Kubernetes: sendInitialEvents=true asks for the state, and
// for the bookmark when the watch allows bookmarks; without
// sendInitialEvents (a spec kube's defaults did not fill in), a watch with
// no revision (ReadMostRecent, ReadAny) sends the state without the
// bookmark.
func (o WatchOptions) InitialEvents() (send, end bool) {
	if o.SendInitialEvents != nil {
		return *o.SendInitialEvents, *o.SendInitialEvents && o.AllowBookmarks
	}
	return o.Mode == ReadMostRecent || o.Mode == ReadAny, false
}
