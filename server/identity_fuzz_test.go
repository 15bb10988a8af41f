package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
)

// noStore and noReader stand for storage the identity APIs never touch.
type noStore struct{ storage.Interface }
type noReader struct{ storage.ListWatcher }

// FuzzReviewBody: any body POSTed to an identity API gets 201 with a
// review of the resource's kind, or a client error Status (400, 415,
// 422), never a 500 or a panic.
func FuzzReviewBody(f *testing.F) {
	f.Add(0, []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods"}}}`))
	f.Add(1, []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x","audiences":["a"]}}`))
	f.Add(2, []byte(`{"kind":"SelfSubjectRulesReview","spec":{"namespace":"default"}}`))
	f.Add(3, []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/x"}}}`))
	f.Add(4, []byte(`{"spec":{"resourceAttributes":{"fieldSelector":{"rawSelector":"a=b"},"labelSelector":{"requirements":[{"key":"a","operator":"In"}]}}}}`))
	f.Add(5, []byte(`{"metadata":{"name":"x"}}`))
	s, err := New(Config{Store: noStore{}, Reader: noReader{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TokenAuthenticator: auth.Union{}, APIAudiences: []string{"a"}})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	paths := []struct{ path, kind string }{
		{"/apis/authorization.k8s.io/v1/subjectaccessreviews", "SubjectAccessReview"},
		{"/apis/authentication.k8s.io/v1/tokenreviews", "TokenReview"},
		{"/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", "SelfSubjectRulesReview"},
		{"/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", "LocalSubjectAccessReview"},
		{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "SelfSubjectAccessReview"},
		{"/apis/authentication.k8s.io/v1/selfsubjectreviews", "SelfSubjectReview"},
	}
	user := &request.User{Name: "u", Groups: []string{auth.GroupAuthenticated}}
	f.Fuzz(func(t *testing.T, which int, body []byte) {
		p := paths[uint(which)%uint(len(paths))]
		r := httptest.NewRequest(http.MethodPost, p.path, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r = r.WithContext(request.WithUser(r.Context(), user))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var out struct{ Kind string }
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%d: not JSON: %q", w.Code, w.Body.Bytes())
		}
		switch w.Code {
		case http.StatusCreated:
			if out.Kind != p.kind {
				t.Fatalf("201 with kind %q, want %q", out.Kind, p.kind)
			}
		case http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
			if out.Kind != "Status" {
				t.Fatalf("%d without a Status: %s", w.Code, w.Body.Bytes())
			}
		default:
			t.Fatalf("%d: %s", w.Code, w.Body.Bytes())
		}
	})
}
