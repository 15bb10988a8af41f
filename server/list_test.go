package server

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
)

func TestPagination(t *testing.T) {
	e := newEnv(t)
	var want []string
	for i := 0; i < 10; i++ {
		n := fmt.Sprintf("cm-%02d", i)
		want = append(want, n)
		e.must(201, "POST", cmPath, cm(n, nil, nil))
	}
	var got []string
	var firstRV string
	cont := ""
	remaining := []float64{}
	for page := 0; ; page++ {
		q := url.Values{"limit": {"3"}}
		if cont != "" {
			q.Set("continue", cont)
		}
		l := e.must(200, "GET", cmPath+"?"+q.Encode(), nil)
		meta := l["metadata"].(map[string]any)
		if page == 0 {
			firstRV = meta["resourceVersion"].(string)
			// Created after the first page: must not show up later.
			e.must(201, "POST", cmPath, cm("cm-05a", nil, nil))
		} else if meta["resourceVersion"] != firstRV {
			t.Fatalf("page %d rv %v, first %s", page, meta["resourceVersion"], firstRV)
		}
		for _, it := range l["items"].([]any) {
			got = append(got, path(it.(map[string]any), "metadata", "name").(string))
		}
		c, _ := meta["continue"].(string)
		if c == "" {
			if _, ok := meta["remainingItemCount"]; ok {
				t.Fatal("last page has remainingItemCount")
			}
			break
		}
		remaining = append(remaining, meta["remainingItemCount"].(float64))
		cont = c
	}
	if !slices.Equal(got, want) {
		t.Fatalf("items %v, want %v", got, want)
	}
	if !slices.Equal(remaining, []float64{7, 4, 1}) {
		t.Fatalf("remainingItemCount %v", remaining)
	}
}

func TestContinueTokenTampering(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 3; i++ {
		e.must(201, "POST", cmPath, cm(fmt.Sprint("c", i), nil, nil))
		e.must(201, "POST", "/api/v1/namespaces/default/secrets", map[string]any{"metadata": map[string]any{"name": fmt.Sprint("s", i)}})
	}
	e.must(201, "POST", cmPath, cm("t0", nil, nil))
	l := e.must(200, "GET", "/api/v1/namespaces/default/secrets?limit=1", nil)
	tok := path(l, "metadata", "continue").(string)
	// As kube's, a token from secrets continues any list it comes with,
	// from its key (after s0) under that list's prefix, never outside it.
	names := func(l map[string]any) []string {
		var out []string
		for _, it := range l["items"].([]any) {
			out = append(out, path(it.(map[string]any), "metadata", "name").(string))
		}
		return out
	}
	if got := names(e.must(200, "GET", cmPath+"?limit=1&continue="+url.QueryEscape(tok), nil)); !slices.Equal(got, []string{"t0"}) {
		t.Errorf("secrets' token on configmaps: %v, want [t0]", got)
	}
	if got := names(e.must(200, "GET", "/api/v1/namespaces/kube-system/secrets?limit=1&continue="+url.QueryEscape(tok), nil)); len(got) != 0 {
		t.Errorf("default's token on kube-system: %v", got)
	}
	for _, bad := range []string{"garbage", tok[:len(tok)-4], "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi8ifQ"} {
		e.expectStatus(400, "BadRequest", "", "GET", cmPath+"?continue="+url.QueryEscape(bad), nil)
	}
	e.expectStatus(400, "BadRequest", "specifying resource version is not allowed when using continue",
		"GET", "/api/v1/namespaces/default/secrets?limit=1&resourceVersion=5&continue="+url.QueryEscape(tok), nil)
	// Compacted continue: 410 Expired with kube's message.
	e.must(201, "POST", cmPath, cm("late", nil, nil))
	cur, err := e.store.CurrentRevision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.Compact(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
	m := e.expectStatus(410, "Expired", "", "GET", "/api/v1/namespaces/default/secrets?limit=1&continue="+url.QueryEscape(tok), nil)
	if msg := m["message"].(string); msg[:40] != "The provided continue parameter is too o" {
		t.Fatalf("message %q", msg)
	}
	// A list at a compacted revision: kube's etcd store's 410.
	e.expectStatus(410, "Expired", "The resourceVersion for the provided list is too old.",
		"GET", cmPath+"?resourceVersion=2&resourceVersionMatch=Exact", nil)
}

func TestBadListAndWatchInput(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		query  string
		code   int
		reason string
		msg    string
	}{
		// The messages are kube-apiserver v1.37.2's for the same requests.
		{"labelSelector=a%20in%20(", 400, "BadRequest", "unable to parse requirement: found '', expected: ',', ')' or identifier"},
		{"labelSelector=a%3D%3D%3Db", 400, "BadRequest", "unable to parse requirement: found '=', expected: identifier"},
		{"labelSelector=a%3D1,", 400, "BadRequest", "found '', expected: identifier after ','"},
		{"labelSelector=a%3Ex", 400, "BadRequest", `unable to parse requirement: values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer`},
		{"labelSelector=a%20exists", 400, "BadRequest", "unable to parse requirement: found 'exists', expected: in, notin, =, ==, !=, gt, lt"},
		{"fieldSelector=spec.nodeName%3Dx", 400, "BadRequest", `"spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"fieldSelector=noop", 400, "BadRequest", "invalid selector: 'noop'; can't understand 'noop'"},
		{"fieldSelector=metadata.name%3D%5Cx", 400, "BadRequest", `invalid field selector: invalid escape sequence: \x`},
		{"fieldSelector=metadata.name%20%3D%20a", 400, "BadRequest", `"metadata.name " is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"limit=abc", 400, "BadRequest", ""},
		{"resourceVersion=abc", 400, "BadRequest", ""},
		{"resourceVersionMatch=Exact", 422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`},
		{"resourceVersion=0&resourceVersionMatch=Exact", 422, "Invalid", ""},
		{"resourceVersion=1&resourceVersionMatch=Bogus", 422, "Invalid", ""},
		{"sendInitialEvents=true", 422, "Invalid", ""},
		{"watch=1&resourceVersionMatch=NotOlderThan", 422, "Invalid", ""},
		{"watch=1&sendInitialEvents=true&allowWatchBookmarks=true", 422, "Invalid", ""},
		{"watch=1&sendInitialEvents=false", 422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`},
		{"resourceVersion=999999&resourceVersionMatch=Exact", 504, "Timeout", ""},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			e.t = t
			e.expectStatus(c.code, c.reason, c.msg, "GET", cmPath+"?"+c.query, nil)
		})
	}
	// Pod field selectors are supported.
	e.must(200, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1,status.phase%3DRunning", nil)
	e.must(200, "GET", "/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DPod", nil)
	// As kube: an empty term is no term; nodes have no namespace to select.
	e.must(200, "GET", cmPath+"?fieldSelector=metadata.name%3Da,", nil)
	e.t = t
	e.expectStatus(400, "BadRequest", "field label not supported: metadata.namespace", "GET", "/api/v1/nodes?fieldSelector=metadata.namespace%3D", nil)
}

func TestBadWriteInput(t *testing.T) {
	e := newEnv(t)
	e.expectStatus(400, "BadRequest", "", "POST", cmPath, `{"metadata":`)
	e.expectStatus(400, "BadRequest", "", "POST", cmPath, `[]`)
	e.expectStatus(400, "BadRequest", "", "POST", cmPath, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "a"}})
	e.expectStatus(400, "BadRequest", "", "POST", cmPath, map[string]any{"apiVersion": "v2", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}})
	e.expectStatus(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request",
		"POST", cmPath, map[string]any{"metadata": map[string]any{"name": "a", "namespace": "kube-system"}})
	m := e.expectStatus(422, "Invalid", "", "POST", cmPath, cm("Bad_Name", map[string]string{"bad key!": "v"}, nil))
	causes := path(m, "details", "causes").([]any)
	if len(causes) != 2 || causes[0].(map[string]any)["field"] != "metadata.name" {
		t.Fatalf("causes: %v", causes)
	}
	e.expectStatus(422, "Invalid", `ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required`, "POST", cmPath, cm("", nil, nil))
	e.expectStatus(415, "UnsupportedMediaType", "", "POST", cmPath, "a: b", "Content-Type", "text/plain")
	e.expectStatus(406, "NotAcceptable", "", "GET", cmPath, nil, "Accept", "application/cbor")
	e.must(200, "GET", cmPath, nil, "Accept", "application/cbor, application/json")
	e.expectStatus(422, "Invalid", "", "POST", "/api/v1/namespaces/default/services", map[string]any{"metadata": map[string]any{"name": "1svc"}})
}

// TestTypedListItemsTypeless: as kube's, a built-in kind's JSON list items
// carry no apiVersion or kind (its typed List encodes none; gzipped lists:
// TestSpliceItems), nor the items of a deletecollection's answer; GET
// keeps them.
func TestTypedListItemsTypeless(t *testing.T) {
	e := newEnv(t)
	for i := range 3 {
		e.must(201, "POST", cmPath, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("c%d", i), "labels": map[string]any{"x": "y"}}})
	}
	check := func(what string, l map[string]any, n int) {
		t.Helper()
		items := l["items"].([]any)
		if len(items) < n {
			t.Fatalf("%s: %d items, want %d", what, len(items), n)
		}
		for _, it := range items {
			m := it.(map[string]any)
			if _, ok := m["apiVersion"]; ok {
				t.Fatalf("%s: item with apiVersion: %v", what, m)
			}
			if _, ok := m["kind"]; ok || path(m, "metadata", "name") == nil {
				t.Fatalf("%s: item %v", what, m)
			}
		}
	}
	check("list", e.must(200, "GET", cmPath, nil), 3)
	if got := e.must(200, "GET", cmPath+"/c0", nil); got["kind"] != "ConfigMap" || got["apiVersion"] != "v1" {
		t.Fatalf("get: %v", got)
	}
	check("deletecollection", e.must(200, "DELETE", cmPath+"?labelSelector=x%3Dy", nil), 3)
}

// TestListOneNameIsOnePage: a field selector that pins a name reads that
// one key, as kube's store does, so a page of it is never continued (the
// longer names after it are not scanned for).
func TestListOneNameIsOnePage(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"a", "ab", "b"} {
		e.must(201, "POST", cmPath, cm(n, nil, nil))
	}
	m := e.must(200, "GET", cmPath+"?fieldSelector=metadata.name%3Da&limit=1", nil)
	items, _ := m["items"].([]any)
	if len(items) != 1 || path(items[0].(map[string]any), "metadata", "name") != "a" || path(m, "metadata", "continue") != nil {
		t.Fatalf("list of a: %v", m)
	}
}
