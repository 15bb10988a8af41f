package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/listwatch/listwatch/internal/protomemo"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// DefaultPageSize is the limit ListAll and ListEach ask for when
// opts.Limit is zero; client-go's pager uses the same.
const DefaultPageSize = 500

// List reads one page. opts.Limit and opts.Continue select the page; the
// returned list's Metadata.Continue names the next one ("" on the last).
func (r *Resource[T]) List(ctx context.Context, opts wire.ListOptions) (*wire.List[T], error) {
	resp, err := r.sendList(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if r.proto != nil && isProtobufResponse(resp.Header) {
		return r.decodeProtobufList(resp.Body)
	}
	var list wire.List[T]
	raw, err := readValue(resp.Body)
	if err == nil {
		err = decodeList[T](raw, &list)
	}
	if err != nil {
		return nil, fmt.Errorf("client: decoding list of %s: %w", r.gvr, err)
	}
	for _, item := range list.Items {
		inheritListType(item, list.TypeMeta)
	}
	return &list, nil
}

// ListChunks reads one page, as List does, and hands its items to each,
// in order, in slices of up to chunk items (default DefaultPageSize) that
// the callee may keep. A page is handed over as it is decoded, protobuf
// or JSON (a large one in batches decoded on other goroutines; see
// itemDecoder), so that the caller can work on its first items while the rest
// arrive and need not hold the page whole (kube-apiserver answers a LIST
// with resourceVersion "0" in one page whatever the limit). It returns
// the page's metadata once the page has been read. An error from each
// stops the read and is returned as is.
func (r *Resource[T]) ListChunks(ctx context.Context, opts wire.ListOptions, chunk int, each func([]T) error) (wire.ListMeta, error) {
	if chunk <= 0 {
		chunk = DefaultPageSize
	}
	resp, err := r.sendList(ctx, opts)
	if err != nil {
		return wire.ListMeta{}, err
	}
	defer resp.Body.Close()
	c := &chunker[T]{size: chunk, each: each}
	var meta wire.ListMeta
	if r.proto != nil && isProtobufResponse(resp.Header) {
		_, meta, err = r.readProtobufItems(resp.Body, c.add, protomemo.FromContext(ctx))
	} else {
		meta, err = readJSONList(resp.Body, c.add)
	}
	return c.done(meta, err, r.gvr)
}

// sendList sends the LIST request of one page.
func (r *Resource[T]) sendList(ctx context.Context, opts wire.ListOptions) (*http.Response, error) {
	path, err := r.collectionPath(r.namespace)
	if err != nil {
		return nil, err
	}
	opts.Watch = false
	return r.c.send(ctx, request{method: http.MethodGet, path: path, query: opts.Query(), accept: r.accept()})
}

// chunker hands decoded items to each in slices of size, and remembers
// whether an error came from each, to return it as is.
type chunker[T object.Object] struct {
	size    int
	each    func([]T) error
	items   []T
	eachErr error
}

func (c *chunker[T]) add(item T) error {
	if c.items == nil {
		c.items = make([]T, 0, c.size)
	}
	c.items = append(c.items, item)
	if len(c.items) < c.size {
		return nil
	}
	return c.flush()
}

func (c *chunker[T]) flush() error {
	if len(c.items) == 0 {
		return nil
	}
	items := c.items
	c.items = nil
	if err := c.each(items); err != nil {
		c.eachErr = err
		return err
	}
	return nil
}

// done ends a read that returned meta and err: it hands over the last
// items, and returns each's error as is, or a decoding error wrapped.
func (c *chunker[T]) done(meta wire.ListMeta, err error, gvr GroupVersionResource) (wire.ListMeta, error) {
	if err == nil {
		err = c.flush()
	}
	switch {
	case c.eachErr != nil:
		return wire.ListMeta{}, c.eachErr
	case err != nil:
		return wire.ListMeta{}, fmt.Errorf("client: decoding list of %s: %w", gvr, err)
	}
	return meta, nil
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
// When a continue token expires (410) before the last page, ListEach falls
// back, like ListAll, to one full list at the latest resourceVersion, and
// delivers that list from its first item. That list is another snapshot:
// items already handed to fn may have changed or gone, so ListEach first
// calls restart, and the caller must drop whatever it built from the items
// delivered so far (restart returning an error stops ListEach with it).
// fn therefore sees each object once after the last restart call. With
// restart nil, ListEach does not fall back: it returns the 410 (IsGone)
// and the caller starts over.
//
// The fallback reads the whole collection in one response, as ListAll's
// does; callers that page to bound memory may prefer restart nil.
func (r *Resource[T]) ListEach(ctx context.Context, opts wire.ListOptions, fn func(T) error, restart func() error) (resourceVersion string, err error) {
	if opts.Limit <= 0 {
		opts.Limit = DefaultPageSize
	}
	for {
		page, err := r.List(ctx, opts)
		if err != nil && opts.Continue != "" && IsGone(err) && restart != nil {
			r.c.log.DebugContext(ctx, "continue token expired, restarting with a full list", "resource", r.gvr.String())
			if err := restart(); err != nil {
				return "", err
			}
			opts = fullListOptions(opts)
			page, err = r.List(ctx, opts)
		}
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
