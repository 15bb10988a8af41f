package client

import (
	"fmt"
	"net/url"
)

// WriteOption changes one Create, Update, Patch or Apply. The options are
// controller-runtime's, and each is the query parameter kube-apiserver
// reads: DryRunAll (dryRun=All), FieldOwner (fieldManager),
// FieldValidation (fieldValidation) and ForceOwnership (force=true).
// Later options win over earlier ones of the same kind.
type WriteOption interface {
	applyToWrite(*writeOptions)
}

// writeOptions is what a call's WriteOptions add up to.
type writeOptions struct {
	dryRun          bool
	force           bool
	fieldManager    string
	fieldValidation string
}

// writeFlag is an option without a value.
type writeFlag int

const (
	// DryRunAll asks the server to run the write through every stage
	// (defaulting, admission, validation, field management) and to store
	// nothing: the answer is the object as it would have been stored.
	DryRunAll writeFlag = iota + 1
	// ForceOwnership makes an apply take over the fields that other
	// managers own, instead of failing with a conflict. Kube accepts
	// force on an apply patch only: it refuses a patch of another type
	// that sets it (422 Invalid, "force: Forbidden: may not be specified
	// for non-apply patch") and ignores it on a create or an update, so
	// the client refuses it, unsent, on anything but an apply, with
	// ErrRequest.
	ForceOwnership
)

func (f writeFlag) applyToWrite(o *writeOptions) {
	switch f {
	case DryRunAll:
		o.dryRun = true
	case ForceOwnership:
		o.force = true
	}
}

// FieldOwner names the field manager of a write: the managedFields entry
// that records the fields it set. An apply needs one (kube answers 422
// "fieldManager: Required value" without); other writes without one are
// recorded under the User-Agent's program name. Kube refuses a name
// longer than 128 bytes or with a character that is not printable (422).
type FieldOwner string

func (f FieldOwner) applyToWrite(o *writeOptions) { o.fieldManager = string(f) }

// FieldValidation says what the server does with fields of the body that
// its schema does not know, and with duplicate fields: "Ignore" drops
// them silently, "Warn" (kube's default) drops them and answers a Warning
// header for each, "Strict" fails the write (400 BadRequest, "strict
// decoding error: unknown field ..."). Kube refuses any other value (422,
// Unsupported value).
type FieldValidation string

func (f FieldValidation) applyToWrite(o *writeOptions) { o.fieldValidation = string(f) }

// newWriteOptions adds up opts for a write; apply says whether it is an
// apply patch, the only write that may force.
func newWriteOptions(opts []WriteOption, apply bool) (writeOptions, error) {
	var o writeOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyToWrite(&o)
		}
	}
	if o.force && !apply {
		return o, fmt.Errorf("%w: ForceOwnership is for an apply patch only (kube: force may not be specified for non-apply patch)", ErrRequest)
	}
	return o, nil
}

// query is the write's query parameters; nil when there are none.
func (o writeOptions) query() url.Values {
	var q url.Values
	set := func(k, v string) {
		if q == nil {
			q = url.Values{}
		}
		q.Set(k, v)
	}
	if o.dryRun {
		set("dryRun", "All")
	}
	if o.fieldManager != "" {
		set("fieldManager", o.fieldManager)
	}
	if o.fieldValidation != "" {
		set("fieldValidation", o.fieldValidation)
	}
	if o.force {
		set("force", "true")
	}
	return q
}

// GetOption changes one Get.
type GetOption interface {
	applyToGet(*getOptions)
}

type getOptions struct {
	resourceVersion string
}

// ResourceVersion lets a Get answer with an object no older than the
// resourceVersion named, instead of the latest one (a quorum read of
// storage, the default). "0" accepts any version the server holds: kube
// answers from its watch cache, which may lag the latest write. Any other
// resourceVersion N is a lower bound: kube answers from its cache once
// the cache has reached N, and, when it does not within three seconds,
// fails with 504 Timeout "Too large resource version" (IsTimeout) and a
// Retry-After of one second, which the client, as client-go, honours a
// few times before returning it. A Get never answers an object at exactly
// N: storage keeps only the latest.
type ResourceVersion string

func (rv ResourceVersion) applyToGet(o *getOptions) { o.resourceVersion = string(rv) }

func newGetOptions(opts []GetOption) getOptions {
	var o getOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyToGet(&o)
		}
	}
	return o
}

// query is the get's query parameters; nil when there are none.
func (o getOptions) query() url.Values {
	if o.resourceVersion == "" {
		return nil
	}
	return url.Values{"resourceVersion": {o.resourceVersion}}
}
