package server

import (
	"net/url"
	"strconv"

	"github.com/listwatch/listwatch/wire"
)

// listOptions parses and validates LIST and WATCH query parameters as
// kube-apiserver does: syntax errors are 400s; forbidden combinations are
// a 422 Invalid about ListOptions.meta.k8s.io.
func listOptions(q url.Values) (wire.ListOptions, error) {
	o, err := wire.ParseListOptions(q)
	if err != nil {
		return o, wire.NewBadRequest(err.Error())
	}
	o.Watch = o.Watch || isWatchQuery(q)
	if o.ResourceVersion != "" && o.ResourceVersion != "0" {
		if n, err := strconv.ParseUint(o.ResourceVersion, 10, 64); err != nil || n == 0 {
			return o, wire.NewBadRequest("invalid resource version: " + strconv.Quote(o.ResourceVersion))
		}
	}
	var causes []wire.StatusCause
	if o.Watch {
		causes = watchOptionCauses(o)
	} else {
		causes = listOptionCauses(o)
	}
	if len(causes) > 0 {
		return o, invalid("ListOptions.meta.k8s.io", "meta.k8s.io", "ListOptions", "", causes...)
	}
	return o, nil
}

func isWatchQuery(q url.Values) bool {
	v := q.Get("watch")
	return v != "" && v != "false" && v != "0"
}

func listOptionCauses(o wire.ListOptions) []wire.StatusCause {
	var causes []wire.StatusCause
	if m := o.ResourceVersionMatch; m != "" {
		if o.ResourceVersion == "" {
			causes = append(causes, fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		}
		if o.Continue != "" {
			causes = append(causes, fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
		}
		if m != wire.MatchExact && m != wire.MatchNotOlderThan {
			causes = append(causes, fieldNotSupported("resourceVersionMatch", m, wire.MatchExact, wire.MatchNotOlderThan, ""))
		}
		if m == wire.MatchExact && o.ResourceVersion == "0" {
			causes = append(causes, fieldForbidden("resourceVersionMatch", `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
		}
	}
	if o.SendInitialEvents != nil {
		causes = append(causes, fieldForbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
	}
	return causes
}

func watchOptionCauses(o wire.ListOptions) []wire.StatusCause {
	var causes []wire.StatusCause
	m := o.ResourceVersionMatch
	if o.SendInitialEvents != nil {
		if m != wire.MatchNotOlderThan {
			causes = append(causes, fieldForbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
		}
		if *o.SendInitialEvents && !o.AllowWatchBookmarks {
			causes = append(causes, fieldForbidden("allowWatchBookmarks", "allowWatchBookmarks must be set to true when sendInitialEvents is true"))
		}
	}
	if m != "" {
		if o.SendInitialEvents == nil {
			causes = append(causes, fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		}
		if m != wire.MatchNotOlderThan {
			causes = append(causes, fieldNotSupported("resourceVersionMatch", m, wire.MatchNotOlderThan))
		}
		if o.Continue != "" {
			causes = append(causes, fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
		}
	}
	return causes
}
