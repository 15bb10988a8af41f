package server

import (
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/wire"
)

// output is the response form a client's Accept header chose.
type output struct {
	form formKind
	// tableVersion is the meta.k8s.io version of a Table: v1 or v1beta1.
	tableVersion string
	// proto: the body is protobuf (built-in kinds), else JSON.
	proto bool
}

type formKind int

const (
	formJSON    formKind = iota // the objects themselves
	formTable                   // a meta.k8s.io Table
	formPartial                 // PartialObjectMetadata(List)
)

// Media types served.
const (
	mediaJSON  = "application/json"
	mediaProto = contentProtobuf
)

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	typ, sub string
	q        float64
	params   map[string]string
}

// parseAccept splits an Accept header as kube-apiserver's negotiation
// does: clauses without a subtype are dropped (but for "*"), q defaults to
// 1 and a bad q is 0, and the clauses are ordered by q, then concrete
// types before wildcards, otherwise as written. Media types and parameter
// names are case-sensitive, as there.
func parseAccept(header string) []acceptClause {
	var out []acceptClause
	for part := range strings.SplitSeq(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, rest, _ := strings.Cut(part, ";")
		c := acceptClause{q: 1}
		typ, sub, hasSub := strings.Cut(mt, "/")
		c.typ = strings.TrimSpace(typ)
		switch {
		case !hasSub:
			if c.typ != "*" {
				continue
			}
			c.sub = "*"
		case strings.Contains(sub, "/"):
			continue
		default:
			c.sub = strings.TrimSpace(sub)
		}
		if rest != "" {
			c.params = map[string]string{}
			for p := range strings.SplitSeq(rest, ";") {
				k, v, ok := strings.Cut(p, "=")
				if !ok || strings.Contains(v, "=") {
					continue
				}
				k, v = strings.TrimSpace(k), strings.TrimSpace(v)
				if k == "q" {
					q, _ := strconv.ParseFloat(v, 32)
					c.q = float64(float32(q))
					continue
				}
				c.params[k] = v
			}
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b acceptClause) int {
		switch {
		case acceptBefore(a, b):
			return -1
		case acceptBefore(b, a):
			return 1
		}
		return 0
	})
	return out
}

func acceptBefore(a, b acceptClause) bool {
	return a.q > b.q || a.typ != "*" && b.typ == "*" || a.sub != "*" && b.sub == "*"
}

// negotiate picks the response form for r from an Accept header as
// kube-apiserver does: the first clause (in parseAccept's order) that a
// served media type matches, exactly or by wildcard, whose parameters the
// endpoint allows. JSON comes first among served types, so wildcards get
// JSON; protobuf is served for built-in kinds only; a Table only as JSON;
// a q of 0 is no refusal (kube ignores it). An empty header is JSON;
// nothing acceptable is a 406.
func negotiate(accept string, r *resource) (output, error) {
	if accept == "" {
		return output{}, nil
	}
	_, proto := protoGVK(r)
	for _, c := range parseAccept(accept) {
		for _, mt := range [...]string{mediaJSON, mediaProto} {
			// Partial metadata is protobuf for custom resources too.
			if mt == mediaProto && !proto && !strings.HasPrefix(c.params["as"], "PartialObjectMetadata") {
				continue
			}
			typ, sub, _ := strings.Cut(mt, "/")
			if c.typ != typ && c.typ != "*" || c.sub != sub && c.sub != "*" {
				continue
			}
			if out, ok := acceptParams(c.params, mt, true); ok {
				return out, nil
			}
		}
	}
	return output{}, wire.NewNotAcceptable(accept)
}

// acceptParams checks a clause's parameters against media type mt:
// stream only "watch", no server-version pinning, and a conversion (as,
// g, v) only when transform allows it and to a Table (JSON only) or
// partial metadata.
func acceptParams(params map[string]string, mt string, transform bool) (output, bool) {
	out := output{proto: mt == mediaProto}
	if s := params["stream"]; s != "" && s != "watch" {
		return out, false
	}
	if params["sv"] != "" {
		return out, false
	}
	as, g, v := params["as"], params["g"], params["v"]
	_, hasAs := params["as"]
	_, hasG := params["g"]
	_, hasV := params["v"]
	if !hasAs && !hasG && !hasV {
		return out, true
	}
	if !transform || g != "meta.k8s.io" || v != "v1" && v != "v1beta1" {
		return out, false
	}
	switch as {
	case "Table":
		if mt != mediaJSON {
			return out, false
		}
		out.form, out.tableVersion = formTable, v
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		if v != "v1" {
			return out, false
		}
		out.form = formPartial
	default:
		return out, false
	}
	return out, true
}

// negotiateError says whether a Status answering a request of r is
// protobuf: kube negotiates errors with the endpoint's media types and no
// conversion, so "protobuf, json" gets a protobuf Status for a built-in
// kind; anything unacceptable falls back to JSON.
func negotiateError(accept string, r *resource) bool {
	if accept == "" {
		return false
	}
	_, proto := protoGVK(r)
	for _, c := range parseAccept(accept) {
		for _, mt := range [...]string{mediaJSON, mediaProto} {
			if mt == mediaProto && !proto {
				continue
			}
			typ, sub, _ := strings.Cut(mt, "/")
			if c.typ != typ && c.typ != "*" || c.sub != sub && c.sub != "*" {
				continue
			}
			if out, ok := acceptParams(c.params, mt, false); ok {
				return out.proto
			}
		}
	}
	return false
}

func parseMediaRange(s string) (string, map[string]string) {
	parts := strings.Split(s, ";")
	typ := strings.ToLower(strings.TrimSpace(parts[0]))
	params := map[string]string{}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		params[strings.ToLower(strings.TrimSpace(k))] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	return typ, params
}

// isJSONContent reports whether a request body's Content-Type is JSON
// (or absent, which kube reads as JSON).
func isJSONContent(ct string) bool {
	typ, _ := parseMediaRange(ct)
	return typ == "" || typ == "application/json"
}
