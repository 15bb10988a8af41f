package server

import (
	"fmt"
	"testing"
)

// TestDeleteCollectionListOptions checks that a collection's delete lists
// what it deletes with the query's list options, validated as a LIST's,
// as kube's DeleteCollection does: a limit deletes only the first page, a
// bad continue token or a forbidden combination refuses before anything
// is deleted, and a resourceVersion reads that revision exactly (it is
// listed in pages) while also being each object's delete precondition.
func TestDeleteCollectionListOptions(t *testing.T) {
	e := newEnv(t)
	cms := "/api/v1/namespaces/default/configmaps"
	for _, n := range []string{"a", "b", "c"} {
		e.must(201, "POST", cms, cm(n, map[string]string{"set": "d"}, nil))
	}
	sel := cms + "?labelSelector=set%3Dd"
	left := func() int {
		t.Helper()
		return len(e.must(200, "GET", sel, nil)["items"].([]any))
	}

	e.expectStatus(400, "BadRequest", "invalid continue token: continue key is not valid: invalid character 'i' looking for beginning of value",
		"DELETE", sel+"&continue=abc", nil)
	// kube's store reads the continue token, after its handler has read
	// the DeleteOptions.
	e.expectStatus(422, "Invalid", `DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`,
		"DELETE", sel+"&continue=abc&dryRun=Some", nil)
	e.expectStatus(422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list`,
		"DELETE", sel+"&sendInitialEvents=true", nil)
	e.expectStatus(422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`,
		"DELETE", sel+"&resourceVersionMatch=Exact", nil)
	// Revision 1 is before the objects: nothing listed, nothing deleted.
	if m := e.must(200, "DELETE", sel+"&resourceVersion=1", nil); len(m["items"].([]any)) != 0 || path(m, "metadata", "resourceVersion") != "1" {
		t.Fatalf("delete at resourceVersion 1: %v", m)
	}
	// Not older than 1 lists them all, whose resourceVersion is not 1.
	e.expectStatus(409, "Conflict", "", "DELETE", sel+"&resourceVersion=1&resourceVersionMatch=NotOlderThan", nil)
	if n := left(); n != 3 {
		t.Fatalf("%d objects left after refused deletes, want 3", n)
	}

	m := e.must(200, "DELETE", sel+"&limit=1", nil)
	if items := m["items"].([]any); len(items) != 1 || path(items[0].(map[string]any), "metadata", "name") != "a" || path(m, "metadata", "continue") == nil {
		t.Fatalf("delete of the first page: %v", m)
	}
	if n := left(); n != 2 {
		t.Fatalf("%d objects left after deleting a page of 1, want 2", n)
	}
}

// TestDeleteCollectionPages checks that a collection's delete without a
// limit goes through every page of its list, answering all the objects
// with the first page's list metadata, as kube's does.
func TestDeleteCollectionPages(t *testing.T) {
	defer func(n int64) { deleteCollectionPageSize = n }(deleteCollectionPageSize)
	deleteCollectionPageSize = 2
	e := newEnv(t)
	cms := "/api/v1/namespaces/default/configmaps"
	for i := range 5 {
		e.must(201, "POST", cms, cm(fmt.Sprint("c", i), nil, nil))
	}
	m := e.must(200, "DELETE", cms, nil)
	if items := m["items"].([]any); len(items) != 5 || path(m, "metadata", "continue") == nil {
		t.Fatalf("delete in pages of 2: %v", m)
	}
	if items := e.must(200, "GET", cms, nil)["items"].([]any); len(items) != 0 {
		t.Fatalf("left after the delete: %v", items)
	}
}
