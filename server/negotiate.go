package server

import (
	"strings"

	"github.com/listwatch/listwatch/wire"
)

// output is the response form a client's Accept header chose.
type output struct {
	form formKind
	// tableVersion is the meta.k8s.io version of a Table: v1 or v1beta1.
	tableVersion string
}

type formKind int

const (
	formJSON    formKind = iota // the objects themselves
	formTable                   // a meta.k8s.io Table
	formPartial                 // PartialObjectMetadata(List)
)

// negotiate picks the first media type in accept that listwatch can
// produce, in the client's order: JSON, or JSON as a Table or as partial
// metadata. Protobuf and CBOR are skipped, so "protobuf, json" gets JSON;
// nothing acceptable is a 406.
func negotiate(accept string) (output, error) {
	if strings.TrimSpace(accept) == "" {
		return output{}, nil
	}
	for _, mr := range strings.Split(accept, ",") {
		typ, params := parseMediaRange(mr)
		switch typ {
		case "application/json", "application/*", "*/*":
		default:
			continue
		}
		if params["q"] == "0" {
			continue
		}
		as, g, v := params["as"], params["g"], params["v"]
		switch {
		case as == "":
			return output{}, nil
		case g != "meta.k8s.io":
			continue
		case as == "Table" && (v == "v1" || v == "v1beta1"):
			return output{form: formTable, tableVersion: v}, nil
		case (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") && v == "v1":
			return output{form: formPartial}, nil
		}
	}
	return output{}, wire.NewNotAcceptable(accept)
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
