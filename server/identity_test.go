package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
)

// TestReviewManagedFields: kube's create handler records a review's write
// in managedFields (manager from fieldManager or the User-Agent, operation
// Update, the review's version) before the REST implementation answers
// it; the reviews answered as sent keep them, SelfSubjectRulesReview and
// SelfSubjectReview, which answer a new object, have none, and a review
// whose metadata must be empty is refused quoting the recorded entry, not
// the one sent.
func TestReviewManagedFields(t *testing.T) {
	s, err := New(Config{Store: noStore{}, Reader: noReader{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	post := func(code int, path, body string) map[string]any {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("User-Agent", "kubectl/v1.37.2 (linux/amd64)")
		r = r.WithContext(request.WithUser(r.Context(), &request.User{Name: "u", Groups: []string{auth.GroupAuthenticated}}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || w.Code != code {
			t.Fatalf("POST %s: %d %s, want %d", path, w.Code, w.Body.Bytes(), code)
		}
		return m
	}
	const authz = "/apis/authorization.k8s.io/v1/"
	sar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods"}}}`
	for _, tc := range []struct {
		path, body, manager string
		fields              string // the entry's fieldsV1, "" for none
	}{
		{authz + "subjectaccessreviews", sar, "kubectl", `{"f:spec":{"f:resourceAttributes":{".":{},"f:resource":{},"f:verb":{}},"f:user":{}}}`},
		{authz + "subjectaccessreviews?fieldManager=fm", sar, "fm", `{"f:spec":{"f:resourceAttributes":{".":{},"f:resource":{},"f:verb":{}},"f:user":{}}}`},
		{authz + "selfsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`,
			"kubectl", `{"f:spec":{"f:resourceAttributes":{".":{},"f:resource":{},"f:verb":{}}}}`},
		{authz + "namespaces/default/localsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"default"},"spec":{"user":"u","resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}}`,
			"kubectl", `{"f:spec":{"f:resourceAttributes":{".":{},"f:namespace":{},"f:resource":{},"f:verb":{}},"f:user":{}}}`},
		{"/apis/authentication.k8s.io/v1/tokenreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x"}}`, "kubectl", `{"f:spec":{"f:token":{}}}`},
		{authz + "selfsubjectrulesreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"default"}}`, "", ""},
		{"/apis/authentication.k8s.io/v1/selfsubjectreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`, "", ""},
	} {
		got := post(201, tc.path, tc.body)
		mfs, _ := path(got, "metadata", "managedFields").([]any)
		if tc.fields == "" {
			if mfs != nil {
				t.Errorf("%s: managedFields %v, want none", tc.path, mfs)
			}
			continue
		}
		if len(mfs) != 1 {
			t.Fatalf("%s: managedFields %v, want one entry", tc.path, mfs)
		}
		mf := mfs[0].(map[string]any)
		group := strings.Split(strings.TrimPrefix(tc.path, "/apis/"), "/")[0]
		if mf["manager"] != tc.manager || mf["operation"] != "Update" || mf["apiVersion"] != group+"/v1" ||
			mf["fieldsType"] != "FieldsV1" || mf["time"] == nil || jsonOf(t, mf["fieldsV1"]) != tc.fields {
			t.Errorf("%s: managedFields entry %v", tc.path, mf)
		}
	}
	refused := post(422, authz+"subjectaccessreviews?fieldManager=fm",
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":{"name":"n","managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{}}}]},"spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods"}}}`)
	if msg, _ := refused["message"].(string); !strings.Contains(msg, `"manager":"fm","operation":"Update","apiVersion":"authorization.k8s.io/v1"`) || strings.Contains(msg, `"manager":"m"`) {
		t.Errorf("refused review: %s", msg)
	}
}

// jsonOf is v as JSON (keys sorted).
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReviewMedia: a review is answered in the media type negotiated, as
// kube's create handler encodes it (protobuf, partial metadata), and a
// Table of it is not offered (kube's review storage converts none): a
// Table alone is a 406 and nothing is reviewed; with a fallback, the
// fallback's media type.
func TestReviewMedia(t *testing.T) {
	s, err := New(Config{Store: noStore{}, Reader: noReader{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	const path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
	const body = `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`
	for _, tc := range []struct {
		accept string
		code   int
		ctype  string
		prefix string // of the body
	}{
		{"application/vnd.kubernetes.protobuf", http.StatusCreated, "application/vnd.kubernetes.protobuf",
			"k8s\x00\n2\n\x17authorization.k8s.io/v1\x12\x17SelfSubjectAccessReview"},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", http.StatusCreated, "application/vnd.kubernetes.protobuf",
			"k8s\x00\n'\n\x0emeta.k8s.io/v1\x12\x15PartialObjectMetadata"},
		{"application/json;as=Table;g=meta.k8s.io;v=v1", http.StatusNotAcceptable, "application/json", "{\n  \"kind\": \"Status\""}, // kube's WriteRawJSON
		{"application/json;as=Table;g=meta.k8s.io;v=v1, application/yaml", http.StatusCreated, "application/yaml", "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\n"},
		{"application/json", http.StatusCreated, "application/json", `{"kind":"SelfSubjectAccessReview"`},
	} {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", tc.accept)
		r = r.WithContext(request.WithUser(r.Context(), &request.User{Name: "u", Groups: []string{auth.GroupAuthenticated}}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code || w.Header().Get("Content-Type") != tc.ctype || !strings.HasPrefix(w.Body.String(), tc.prefix) {
			t.Errorf("Accept %s: %d %s %.120q; want %d %s %.120q", tc.accept, w.Code, w.Header().Get("Content-Type"), w.Body.String(), tc.code, tc.ctype, tc.prefix)
		}
	}
}
