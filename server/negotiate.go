package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// output is the response form a client's Accept header chose.
type output struct {
	form formKind
	// metaVersion is the meta.k8s.io version of a Table or of partial
	// metadata: v1 or v1beta1.
	metaVersion string
	// proto: the body is protobuf (built-in kinds), else JSON.
	proto bool
	// partialList: partial metadata was asked for as a list
	// (PartialObjectMetadataList), which one object cannot be, nor a list
	// PartialObjectMetadata (asPartial).
	partialList bool
	// yaml: the response is YAML, converted from its JSON (yamlresp.go);
	// never for a watch.
	yaml bool
}

// metaAPIVersion is the apiVersion of a Table or of partial metadata (a
// Table row's too).
func (o output) metaAPIVersion() string { return "meta.k8s.io/" + o.metaVersion }

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
// endpoint allows. JSON comes first among served types, then YAML, so
// wildcards get JSON; protobuf is served for built-in kinds only; a Table
// as JSON or YAML; a q of 0 is no refusal (kube ignores it). An empty
// header is JSON; nothing acceptable is a 406.
func negotiate(accept string, r *resource) (output, error) {
	return negotiateTables(accept, r, true)
}

// negotiateTables is negotiate for an endpoint whose kube storage makes
// Tables (tables) or not: kube's handlers offer a Table only when the
// storage is a TableConvertor (RequestScope.AllowsMediaTypeTransform), so
// a clause asking for one is passed over there, as one it cannot serve
// (tableConverts).
func negotiateTables(accept string, r *resource, tables bool) (output, error) {
	if accept == "" {
		return output{}, nil
	}
	_, proto := protoGVK(r)
	for _, c := range parseAccept(accept) {
		for _, mt := range [...]string{mediaJSON, contentYAML, mediaProto} {
			// Partial metadata is protobuf for custom resources too.
			if mt == mediaProto && !proto && !strings.HasPrefix(c.params["as"], "PartialObjectMetadata") {
				continue
			}
			typ, sub, _ := strings.Cut(mt, "/")
			if c.typ != typ && c.typ != "*" || c.sub != sub && c.sub != "*" {
				continue
			}
			if out, ok := acceptParams(c.params, mt, true); ok && (tables || out.form != formTable) {
				out.yaml = mt == contentYAML
				return out, nil
			}
		}
	}
	return output{}, notAcceptable()
}

// notAcceptable is kube's 406 when no clause of Accept is served: the same
// media types for built-in kinds and custom resources (whose Status, not
// themselves, can be protobuf).
func notAcceptable() error {
	return notAcceptableMsg("only the following media types are accepted: " + builtinMediaTypes)
}

// streamable is the check kube's watch handler makes of out, the
// response negotiated as any (negotiate, YAML included), once it has read
// the watch's options (a bad one is its 400 first) and its Table's: that
// it can be a stream, which YAML cannot. A YAML watch is a 406 naming the
// stream media types.
func streamable(out output) error {
	if out.yaml {
		return notAcceptableMsg("only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch")
	}
	return nil
}

func notAcceptableMsg(msg string) *wire.Status {
	return &wire.Status{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: wire.StatusFailure,
		Code: http.StatusNotAcceptable, Reason: wire.ReasonNotAcceptable, Message: msg}
}

// acceptable is what kube does with a request's Accept before its
// handler reads or writes anything: for built-in kinds its router's
// checks (a patch's Content-Type, then Accept: routeAccepts), then the
// handler's negotiation of the response's form, kept for the response
// (output). So an unacceptable Accept is a 406 before a write happens or
// a missing object is a 404.
func (c *call) acceptable(info *request.Info) error {
	if c.res.crd == "" {
		if routeRefusesContentType(c.r) {
			return c.res.unsupportedPatch()
		}
		if err := routeAccepts(c.r.Header.Get("Accept"), info.Verb == "list" || info.Verb == "watch"); err != nil {
			return err
		}
	}
	_, err := c.output()
	return err
}

// output is the form of c's response, negotiated from Accept once per
// request (a watch's is then checked by streamable).
func (c *call) output() (output, error) {
	if !c.negotiated {
		c.out, c.outErr = negotiateTables(c.r.Header.Get("Accept"), c.res, !c.noTable)
		c.negotiated = true
	}
	return c.out, c.outErr
}

// asPartial checks the partial metadata out asks for against what the
// response is (list: a list), as kube's response transformation does:
// PartialObjectMetadataList of one object is kube's 406, or for a custom
// resource its 500 (its unstructured object passes for a list until its
// items are looked for); PartialObjectMetadata of a list is a 406. The
// messages name kube's internal Go types.
func (c *call) asPartial(out output, list bool) error {
	if out.form != formPartial || out.partialList == list {
		return nil
	}
	typeName := "*unstructured.Unstructured"
	if t := c.res.typed(); t != nil {
		kind := t.internal
		if list {
			kind.Kind += "List"
		}
		if obj, err := t.scheme.New(kind); err == nil {
			typeName = fmt.Sprintf("%T", obj)
		}
	} else if list {
		typeName += "List"
	}
	if list {
		return notAcceptableMsg("you requested PartialObjectMetadata, but the requested object is a list (" + typeName + ")")
	}
	if c.res.typed() == nil {
		return plainError(errors.New("content is not a list"))
	}
	return notAcceptableMsg("you requested PartialObjectMetadataList, but the requested object is not a list (" + typeName + ")")
}

// acceptParams checks a clause's parameters against media type mt:
// stream only "watch" and not for YAML (kube has no YAML stream
// serializer, so "application/yaml;stream=watch" is refused even for a
// GET, where JSON's and protobuf's are served as their plain type, and
// for a Status), no server-version pinning, and a conversion (as, g, v)
// only when transform allows it and to a Table (not protobuf) or partial
// metadata, of meta.k8s.io/v1 or v1beta1 (either, as kube).
func acceptParams(params map[string]string, mt string, transform bool) (output, bool) {
	out := output{proto: mt == mediaProto}
	if s := params["stream"]; s != "" && (s != "watch" || mt == contentYAML) {
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
		if mt == mediaProto {
			return out, false
		}
		out.form, out.metaVersion = formTable, v
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		out.form, out.metaVersion, out.partialList = formPartial, v, as == "PartialObjectMetadataList"
	default:
		return out, false
	}
	return out, true
}

// errorMedia is the media type of a Status answering a request: kube
// negotiates errors with the endpoint's media types (JSON, YAML,
// protobuf) and no conversion, so "protobuf, json" gets a protobuf
// Status, for built-in kinds and custom resources alike (a custom
// resource's serializer encodes a Status, not the resource, in protobuf),
// and a YAML clause asking for a Table or partial metadata is passed
// over; anything unacceptable falls back to JSON.
func errorMedia(accept string) string {
	if mt, ok := offeredMedia(accept); ok {
		return mt
	}
	return mediaJSON
}

// offeredMedia is the media type, of JSON, YAML and protobuf, that kube's
// negotiation picks for accept (JSON when it is empty), or false when it
// matches none of them.
func offeredMedia(accept string) (string, bool) {
	if accept == "" {
		return mediaJSON, true
	}
	for _, c := range parseAccept(accept) {
		for _, mt := range [...]string{mediaJSON, contentYAML, mediaProto} {
			typ, sub, _ := strings.Cut(mt, "/")
			if c.typ != typ && c.typ != "*" || c.sub != sub && c.sub != "*" {
				continue
			}
			if _, ok := acceptParams(c.params, mt, false); ok {
				return mt, true
			}
		}
	}
	return "", false
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

// builtinMediaTypes are the media types kube-apiserver serves built-in
// kinds in, in its order (its routes' Produces).
const builtinMediaTypes = "application/json, application/yaml, application/vnd.kubernetes.protobuf"

// routeAccepts is the check kube-apiserver's router (go-restful) makes
// before a built-in kind's handler runs: one of the Accept header's media
// types, parameters cut off, is "*/*" or exactly one the route produces
// (JSON, YAML, protobuf), else the router's own 406. So "application/*",
// which kube's negotiation would match, is refused for built-in kinds;
// custom resources, whose handler is not behind that router, are not
// checked. (The router checks a patch's Content-Type first:
// routeRefusesContentType.) A collection's GET (stream: a list or watch)
// also produces the watch stream types, which its 406 lists.
func routeAccepts(accept string, stream bool) error {
	if accept == "" {
		return nil
	}
	for mt := range strings.SplitSeq(accept, ",") {
		mt, _, _ = strings.Cut(mt, ";")
		switch strings.TrimSpace(mt) {
		case "*/*", mediaJSON, contentYAML, mediaProto:
			return nil
		}
	}
	produces := builtinMediaTypes
	if stream {
		produces += ", application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
	}
	st := notAcceptableMsg("406: Not Acceptable\n\nAvailable representations: " + produces)
	st.Details = &wire.StatusDetails{}
	return st
}

// routeRefusesContentType reports whether kube's router would refuse r's
// body for its Content-Type (415) before looking at Accept: only a
// patch's route says what it consumes (the patch types), and the router
// checks bodies of a declared length only.
func routeRefusesContentType(r *http.Request) bool {
	if r.Method != http.MethodPatch || r.ContentLength <= 0 {
		return false
	}
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	switch strings.TrimSpace(ct) {
	case contentJSONPatch, contentMergePatch, contentStrategicPatch, contentApplyPatch:
		return false
	}
	return true
}
