package wire

import (
	"fmt"
	"net/url"
	"strconv"
)

// ResourceVersionMatch values.
const (
	MatchNotOlderThan = "NotOlderThan"
	MatchExact        = "Exact"
)

// ListOptions are the query parameters of LIST and WATCH.
type ListOptions struct {
	LabelSelector        string
	FieldSelector        string
	Watch                bool
	AllowWatchBookmarks  bool
	ResourceVersion      string
	ResourceVersionMatch string
	TimeoutSeconds       *int64
	Limit                int64
	Continue             string
	SendInitialEvents    *bool
}

// Query encodes the options as URL query parameters, omitting zero values.
func (o ListOptions) Query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("labelSelector", o.LabelSelector)
	set("fieldSelector", o.FieldSelector)
	if o.Watch {
		q.Set("watch", "true")
	}
	if o.AllowWatchBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	set("resourceVersion", o.ResourceVersion)
	set("resourceVersionMatch", o.ResourceVersionMatch)
	if o.TimeoutSeconds != nil {
		q.Set("timeoutSeconds", strconv.FormatInt(*o.TimeoutSeconds, 10))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.FormatInt(o.Limit, 10))
	}
	set("continue", o.Continue)
	if o.SendInitialEvents != nil {
		q.Set("sendInitialEvents", strconv.FormatBool(*o.SendInitialEvents))
	}
	return q
}

// ParseListOptions decodes LIST/WATCH query parameters. It checks syntax
// only (numbers and booleans); the server checks the combinations.
func ParseListOptions(q url.Values) (ListOptions, error) {
	o := ListOptions{
		LabelSelector:        q.Get("labelSelector"),
		FieldSelector:        q.Get("fieldSelector"),
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: q.Get("resourceVersionMatch"),
		Continue:             q.Get("continue"),
	}
	var err error
	if o.Watch, err = parseBool(q, "watch"); err != nil {
		return o, err
	}
	if o.AllowWatchBookmarks, err = parseBool(q, "allowWatchBookmarks"); err != nil {
		return o, err
	}
	if v := q.Get("sendInitialEvents"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("sendInitialEvents: %q is not a boolean", v)
		}
		o.SendInitialEvents = &b
	}
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, fmt.Errorf("timeoutSeconds: %q is not a non-negative integer", v)
		}
		o.TimeoutSeconds = &n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, fmt.Errorf("limit: %q is not a non-negative integer", v)
		}
		o.Limit = n
	}
	return o, nil
}

func parseBool(q url.Values, key string) (bool, error) {
	v := q.Get(key)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not a boolean", key, v)
	}
	return b, nil
}
