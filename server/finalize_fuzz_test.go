package server

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

// FuzzDeleteOptions: any DELETE body and query either is refused with a
// 400 or 422 Status, or yields options; and planning the deletion of any
// object with them marks it (deletionTimestamp set) or deletes it, never
// both and never a panic.
func FuzzDeleteOptions(f *testing.F) {
	f.Add([]byte(`{"propagationPolicy":"Orphan"}`), "gracePeriodSeconds=5", []byte(`{"metadata":{"name":"p","finalizers":["a/b"]},"spec":{"nodeName":"n"}}`))
	f.Add([]byte(`{"orphanDependents":true,"propagationPolicy":"Foreground"}`), "", []byte(`{"metadata":{"name":"p"}}`))
	f.Add([]byte(``), "orphanDependents=false&dryRun=All", []byte(`{"metadata":{"name":"p","deletionTimestamp":"2020-01-01T00:00:00Z","deletionGracePeriodSeconds":30},"spec":{"nodeName":"n"}}`))
	f.Add([]byte(`{"gracePeriodSeconds":-3,"preconditions":{"uid":"x"}}`), "gracePeriodSeconds=x", []byte(`{"metadata":{"name":"p","finalizers":["orphan","foregroundDeletion"]},"status":{"phase":"Failed"}}`))
	pods := builtinResources()[3]
	cms := builtinResources()[1]
	f.Fuzz(func(t *testing.T, body []byte, query string, object []byte) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		req := httptest.NewRequest("DELETE", "/x", bytes.NewReader(body))
		req.URL.RawQuery = q.Encode()
		c := &call{s: &Server{maxBody: 1 << 20}, w: httptest.NewRecorder(), r: req, res: pods}
		o, err := c.deleteOptions()
		if err != nil {
			var st *wire.Status
			if !errors.As(err, &st) || st.Code != 400 && st.Code != 422 {
				t.Fatalf("refusal is not a 400 or 422 Status: %v", err)
			}
			return
		}
		cur, err := decodeDoc(object)
		if err != nil {
			return
		}
		for _, r := range []*resource{pods, cms} {
			c.res = r
			p := c.planDelete(cur, o, testNow)
			switch p.action {
			case deleteMark:
				if _, ok := p.next.metaTime("deletionTimestamp"); !ok {
					t.Fatalf("%s: marked without a deletionTimestamp: %s", r.plural, p.next.encode())
				}
				if p.thenDelete && len(p.next.finalizers()) > 0 {
					t.Fatalf("%s: deleted with finalizers: %s", r.plural, p.next.encode())
				}
			case deleteNow, deletePending:
				if p.next != nil {
					t.Fatalf("%s: a plan without a write has an object", r.plural)
				}
			}
		}
	})
}
