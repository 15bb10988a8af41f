package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/listwatch/listwatch/wire"
)

// DefaultPageSize is the limit ListAll and ListEach ask for when
// opts.Limit is zero; client-go's pager uses the same.
const DefaultPageSize = 500

// List reads one page. opts.Limit and opts.Continue select the page; the
// returned list's Metadata.Continue names the next one ("" on the last).
func (r *Resource[T]) List(ctx context.Context, opts wire.ListOptions) (*wire.List[T], error) {
	opts.Watch = false
	resp, err := r.c.send(ctx, request{method: http.MethodGet, path: r.path(r.namespace, ""), query: opts.Query(), accept: r.accept()})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if r.proto != nil && isProtobufResponse(resp.Header) {
		return r.decodeProtobufList(resp.Body)
	}
	var list wire.List[T]
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("client: decoding list of %s: %w", r.gvr, err)
	}
	return &list, nil
}

// ListAll reads every page and returns them as one list whose
// resourceVersion is the snapshot's (every page carries the first page's).
//
// Pages are opts.Limit items, or DefaultPageSize when it is zero. When a
// continue token expires (410, reason Expired or Gone) before the last page, ListAll does
// what client-go's pager does: it drops the pages read so far and makes
// one unpaginated list at the latest resourceVersion.
func (r *Resource[T]) ListAll(ctx context.Context, opts wire.ListOptions) (*wire.List[T], error) {
	if opts.Limit <= 0 {
		opts.Limit = DefaultPageSize
	}
	var all *wire.List[T]
	for {
		page, err := r.List(ctx, opts)
		if err != nil {
			if opts.Continue != "" && IsGone(err) {
				r.c.log.DebugContext(ctx, "continue token expired, listing in full", "resource", r.gvr.String())
				return r.List(ctx, fullListOptions(opts))
			}
			return nil, err
		}
		if all == nil {
			all = page
		} else {
			all.Items = append(all.Items, page.Items...)
			all.Metadata.ResourceVersion = page.Metadata.ResourceVersion
		}
		if page.Metadata.Continue == "" {
			all.Metadata.Continue = ""
			all.Metadata.RemainingItemCount = nil
			return all, nil
		}
		opts = nextPageOptions(opts, page.Metadata.Continue)
	}
}

// ListEach reads every page and calls fn for each item in order, holding
// no more than one page. It returns the snapshot's resourceVersion, from
// which a watch can start. An error from fn stops the list and is
// returned as is.
//
// Unlike ListAll it cannot fall back to a full list when a continue token
// expires, because items already went to fn: it returns the 410 error
// (IsGone), and the caller should start over.
func (r *Resource[T]) ListEach(ctx context.Context, opts wire.ListOptions, fn func(T) error) (resourceVersion string, err error) {
	if opts.Limit <= 0 {
		opts.Limit = DefaultPageSize
	}
	for {
		page, err := r.List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, item := range page.Items {
			if err := fn(item); err != nil {
				return "", err
			}
		}
		if page.Metadata.Continue == "" {
			return page.Metadata.ResourceVersion, nil
		}
		opts = nextPageOptions(opts, page.Metadata.Continue)
	}
}

// nextPageOptions asks for the page after token. A continue request must
// not carry a resourceVersion (the token holds it); the server rejects one.
func nextPageOptions(opts wire.ListOptions, token string) wire.ListOptions {
	opts.Continue = token
	opts.ResourceVersion = ""
	opts.ResourceVersionMatch = ""
	return opts
}

// fullListOptions is the fallback after an expired continue token: the
// same selectors, no paging, the latest resourceVersion.
func fullListOptions(opts wire.ListOptions) wire.ListOptions {
	opts.Continue = ""
	opts.Limit = 0
	opts.ResourceVersion = ""
	opts.ResourceVersionMatch = ""
	return opts
}
