package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// ListOptions configure "bench list".
type ListOptions struct {
	// Resource is a core/v1 resource (default "configmaps") in Namespace.
	Resource  string
	Namespace string
	// PageSizes are the limits to try; 0 lists in one request.
	PageSizes []int64
	// RVModes are the resourceVersions of the first page: "" (unset) and
	// "0" by default.
	RVModes []string
	// Repeat is how many full lists each case makes; default 3.
	Repeat int
	// Protobuf asks for application/vnd.kubernetes.protobuf, as
	// client-go's typed clients do, instead of JSON.
	Protobuf bool
}

// listPage is the part of a LIST answer bench reads. Only the items'
// number matters: they decode into nothing, so that bench allocates (and
// collects) nothing per item between the requests it times.
type listPage struct {
	Metadata struct {
		ResourceVersion    string `json:"resourceVersion"`
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []struct{} `json:"items"`
}

// RunList times LIST for every (page size, RV mode) in opts, following
// continue tokens to the end of each list. It answers the seed article's
// question — does the server honour limit? — per case.
func RunList(ctx context.Context, c *client.Client, opts ListOptions) (*ListResult, error) {
	if opts.Resource == "" {
		opts.Resource = "configmaps"
	}
	if len(opts.PageSizes) == 0 {
		opts.PageSizes = []int64{50, 500, 5000, 0}
	}
	if len(opts.RVModes) == 0 {
		opts.RVModes = []string{"", "0"}
	}
	if opts.Repeat <= 0 {
		opts.Repeat = 3
	}
	path := "/api/v1/namespaces/" + url.PathEscape(opts.Namespace) + "/" + url.PathEscape(opts.Resource)
	res := &ListResult{Resource: opts.Resource, Namespace: opts.Namespace, Repeat: opts.Repeat, Objects: -1, Encoding: "json"}
	if opts.Protobuf {
		res.Encoding = "protobuf"
	}
	// body is every page's buffer, kept across pages and lists: growing a
	// fresh one per page (io.ReadAll) costs the client more than the server
	// spends on a 500-item page, and that would be timed as the server's.
	var body bytes.Buffer
	for _, size := range opts.PageSizes {
		for _, mode := range opts.RVModes {
			lc := ListCase{PageSize: size, RVMode: mode, LimitHonoured: true}
			var pages, lists []time.Duration
			var bytes int64
			// An untimed list first, so that neither body's growth to
			// this case's size nor either server's first list after the
			// last case is timed.
			var warm []time.Duration
			if _, err := listOnce(ctx, c, path, size, mode, &warm, &body); err != nil {
				return nil, fmt.Errorf("bench: list %s limit=%d rv=%q: %w", path, size, mode, err)
			}
			for range opts.Repeat {
				st, err := listOnce(ctx, c, path, size, mode, &pages, &body)
				if err != nil {
					return nil, fmt.Errorf("bench: list %s limit=%d rv=%q: %w", path, size, mode, err)
				}
				lists = append(lists, st.took)
				bytes += st.bytes
				lc.PagesPerList, lc.ItemsPerList = st.pages, st.items
				lc.MaxPageItems = max(lc.MaxPageItems, st.maxPage)
				if size > 0 && st.maxPage > int(size) {
					lc.LimitHonoured = false
				}
				if res.Objects < 0 {
					res.Objects = st.items
				}
			}
			lc.Page, lc.FullList = Summarize(pages), Summarize(lists)
			lc.BytesPerList = bytes / int64(opts.Repeat)
			res.Cases = append(res.Cases, lc)
		}
	}
	return res, nil
}

type listStats struct {
	pages, items, maxPage int
	bytes                 int64
	// took is the sum of the pages' latencies: the time the server and
	// the network spent, without bench's own decoding between pages.
	took time.Duration
}

// listOnce reads one complete list, appending each page's latency to
// pageLat. Only the first page carries the resourceVersion: Kubernetes
// refuses a continue token together with one, since the token pins the
// version itself.
func listOnce(ctx context.Context, c *client.Client, path string, limit int64, rv string, pageLat *[]time.Duration, body *bytes.Buffer) (listStats, error) {
	var st listStats
	token := ""
	for {
		q := url.Values{}
		if limit > 0 {
			q.Set("limit", strconv.FormatInt(limit, 10))
		}
		if token != "" {
			q.Set("continue", token)
		} else if rv != "" {
			q.Set("resourceVersion", rv)
		}
		page, n, took, err := getPage(ctx, c, path, q, body)
		if err != nil {
			return st, err
		}
		*pageLat = append(*pageLat, took)
		st.took += took
		st.pages++
		st.items += len(page.Items)
		st.maxPage = max(st.maxPage, len(page.Items))
		st.bytes += n
		token = page.Metadata.Continue
		if token == "" {
			return st, nil
		}
	}
}

// getPage GETs one page into body (reset first). took runs from sending
// the request to having read the whole body, before decoding it.
func getPage(ctx context.Context, c *client.Client, path string, q url.Values, body *bytes.Buffer) (page *listPage, n int64, took time.Duration, err error) {
	body.Reset()
	start := time.Now()
	resp, err := c.Do(ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return nil, 0, 0, err
	}
	defer resp.Body.Close()
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return nil, 0, 0, err
	}
	took = time.Since(start)
	if page, err = decodeListPage(body.Bytes()); err != nil {
		return nil, 0, 0, fmt.Errorf("decoding list page: %w", err)
	}
	return page, int64(body.Len()), took, nil
}

// decodeListPage reads a page in JSON or, when it has the k8s protobuf
// envelope, in protobuf (items counted, not decoded).
func decodeListPage(body []byte) (*listPage, error) {
	page := &listPage{}
	if !wire.IsProtobufEnvelope(body) {
		return page, json.Unmarshal(body, page)
	}
	e, err := wire.DecodeEnvelope(body)
	if err != nil {
		return nil, err
	}
	lm, err := wire.DecodeProtobufList(e.Raw, func(raw []byte) error {
		page.Items = append(page.Items, struct{}{})
		return nil
	})
	if err != nil {
		return nil, err
	}
	page.Metadata.ResourceVersion, page.Metadata.Continue, page.Metadata.RemainingItemCount = lm.ResourceVersion, lm.Continue, lm.RemainingItemCount
	return page, nil
}

// protobufClient is a client of t whose requests ask for protobuf: a
// transport wrapper sets their Accept header, since the client's raw
// requests ask for JSON.
func (t *Target) protobufClient() (*client.Client, error) {
	cfg, err := t.config()
	if err != nil {
		return nil, err
	}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return acceptProtobuf{rt} }
	return client.New(cfg)
}

type acceptProtobuf struct{ next http.RoundTripper }

func (a acceptProtobuf) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	return a.next.RoundTrip(r)
}
