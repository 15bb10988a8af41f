package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	kubesa "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
)

// saStore holds service account default/robot and its pod default/p;
// only Get works.
type saStore struct{ storage.Interface }

func (saStore) Get(_ context.Context, key string) (storage.KV, error) {
	switch key {
	case "/registry/serviceaccounts/default/robot":
		return storage.KV{Key: key, Revision: 2, Value: []byte(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot","namespace":"default","uid":"sa-uid"}}`)}, nil
	case "/registry/pods/default/p":
		return storage.KV{Key: key, Revision: 3, Value: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","uid":"pod-uid"},"spec":{"serviceAccountName":"robot","nodeName":"n","containers":[{"name":"c","image":"i"}]}}`)}, nil
	}
	return storage.KV{}, storage.ErrNotFound
}

// FuzzTokenRequestBody: any body POSTed to serviceaccounts/robot/token
// gets 201 with a TokenRequest carrying a token, or a client error Status
// (400, 404, 409, 415, 422), never a 500 or a panic.
func FuzzTokenRequestBody(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":["a"],"expirationSeconds":600}}`))
	f.Add([]byte(`{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p","uid":"pod-uid"}}}`))
	f.Add([]byte(`{"spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s"}}}`))
	f.Add([]byte(`{"spec":{"boundObjectRef":{"kind":"Node","name":"n"}}}`))
	f.Add([]byte(`{"metadata":{"name":"other","namespace":"x","uid":"u"},"spec":{"expirationSeconds":1}}`))
	f.Add([]byte(`{"kind":"ServiceAccount"}`))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	issuer, err := kubesa.JWTTokenGenerator("https://issuer", key)
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(Config{Store: saStore{}, Reader: noReader{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		APIAudiences: []string{"https://issuer"}, ServiceAccountTokens: &ServiceAccountTokenConfig{Issuer: issuer, MaxExpiration: 1 << 40}})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	user := &request.User{Name: "admin", Groups: []string{auth.GroupMasters}}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/serviceaccounts/robot/token", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r = r.WithContext(request.WithUser(r.Context(), user))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var out struct {
			Kind   string
			Status json.RawMessage
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%d: not JSON: %q", w.Code, w.Body.Bytes())
		}
		switch w.Code {
		case http.StatusCreated:
			var st struct{ Token string }
			if out.Kind != "TokenRequest" || json.Unmarshal(out.Status, &st) != nil || st.Token == "" {
				t.Fatalf("201: %s", w.Body.Bytes())
			}
		case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
			if out.Kind != "Status" {
				t.Fatalf("%d without a Status: %s", w.Code, w.Body.Bytes())
			}
		default:
			t.Fatalf("%d: %s", w.Code, w.Body.Bytes())
		}
	})
}
