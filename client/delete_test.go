package client

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// TestDeleteReturnsWhatTheServerSent: a delete answers with the object
// (still there behind a finalizer, or a resource that returns deleted
// objects) or with a Success Status; both reach the caller.
func TestDeleteReturnsWhatTheServerSent(t *testing.T) {
	const pending = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"9",` +
		`"deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["example.com/hold"]}}`
	const success = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",` +
		`"details":{"name":"a","kind":"configmaps","uid":"u-1"}}`
	for _, tc := range []struct {
		name       string
		code       int
		body       string
		wantObject bool
	}{
		{"object held by a finalizer", http.StatusOK, pending, true},
		{"accepted", http.StatusAccepted, pending, true},
		{"success status", http.StatusOK, success, false},
		{"empty body", http.StatusOK, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodDelete {
					http.Error(w, "unexpected", http.StatusMethodNotAllowed)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.code)
				_, _ = io.WriteString(w, tc.body)
			}))
			cms := NewResource[*object.Unstructured](newTestClient(t, srv, nil), configMaps).Namespace("ns")
			res, err := cms.Delete(ctxT(t), "a", wire.DeleteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Code != tc.code || res.HasObject() != tc.wantObject {
				t.Fatalf("result %+v: code %d, HasObject %v", res, res.Code, res.HasObject())
			}
			if tc.wantObject {
				if ts, _ := res.Object.Nested("metadata", "deletionTimestamp"); ts == nil || res.Status != nil {
					t.Fatalf("object %v, status %v", res.Object, res.Status)
				}
			}
			if tc.body == success && (res.Status == nil || res.Status.Status != wire.StatusSuccess ||
				res.Status.Details == nil || res.Status.Details.UID != "u-1") {
				t.Fatalf("status %+v", res.Status)
			}
		})
	}
}

// FuzzDecodeDeleteResult: any answer body decodes to a result or an error,
// never a panic.
func FuzzDecodeDeleteResult(f *testing.F) {
	f.Add([]byte(`{"kind":"Status","status":"Success"}`))
	f.Add([]byte(`{"kind":"ConfigMap","metadata":{"name":"a"}}`))
	f.Add([]byte(`{"kind":7}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body))}
		res, err := decodeDeleteResult[*object.Unstructured](resp)
		if err == nil && res.Status != nil && !isZero(res.Object) {
			t.Fatal("both a Status and an object")
		}
	})
}
