package storage

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestContinueRoundTrip(t *testing.T) {
	tok, err := EncodeContinue("/registry/configmaps/", "/registry/configmaps/ns/b\x00", 17)
	if err != nil {
		t.Fatal(err)
	}
	key, rv, err := DecodeContinue(tok, "/registry/configmaps/")
	if err != nil || key != "/registry/configmaps/ns/b\x00" || rv != 17 {
		t.Fatalf("got %q %d %v", key, rv, err)
	}
	// As in kube, a token continues whatever list it is sent with, from
	// its start key under that list's prefix.
	if key, _, err := DecodeContinue(tok, "/registry/secrets/"); err != nil || key != "/registry/secrets/ns/b\x00" {
		t.Fatalf("token on another prefix: %q %v", key, err)
	}
	if _, err := EncodeContinue("/registry/a/", "/registry/b/x", 1); err == nil {
		t.Fatal("key outside prefix encoded")
	}
	if _, err := EncodeContinue("/registry/a/", "/registry/a/", 1); err == nil {
		t.Fatal("the prefix itself encoded")
	}
}

// TestContinueKubeMessages: each bad token fails with ErrInvalidContinue
// and kube-apiserver's message for it.
func TestContinueKubeMessages(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct{ token, msg string }{
		{"!!", "continue key is not valid: illegal base64 data at input byte 0"},
		{enc("{"), "continue key is not valid: unexpected end of JSON input"},
		{enc(`{"v":"meta.k8s.io/v2","rv":1,"start":"a"}`), "continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2"},
		{enc(`{"v":"meta.k8s.io/v1","rv":0,"start":"a"}`), "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"},
		{enc(`{"v":"meta.k8s.io/v1","rv":-1,"start":"a"}`), "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"},
		{enc(`{"v":"meta.k8s.io/v1","rv":1,"start":""}`), "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"},
		{enc(`{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/a"}`), "continue key is not valid: ../secrets/a"},
		{enc(`{"v":"meta.k8s.io/v1","rv":1,"start":"a//b"}`), "continue key is not valid: a//b"},
	} {
		_, _, err := DecodeContinue(tc.token, "/registry/pods/")
		if !errors.Is(err, ErrInvalidContinue) || !strings.HasSuffix(err.Error(), ": "+tc.msg) {
			t.Errorf("%q: %v, want %q", tc.token, err, tc.msg)
		}
		if err2 := decodeToken(tc.token); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%q: decodeToken %v, DecodeContinue %v", tc.token, err2, err)
		}
	}
}

// FuzzDecodeContinue: no token, however crafted, decodes to a key outside
// the request's prefix or to a revision below 1.
func FuzzDecodeContinue(f *testing.F) {
	good, _ := EncodeContinue("/registry/pods/", "/registry/pods/a", 3)
	f.Add(good)
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi8uLi9zZWNyZXRzIn0")
	f.Fuzz(func(t *testing.T, tok string) {
		key, rv, err := DecodeContinue(tok, "/registry/pods/")
		if err != nil {
			if !errors.Is(err, ErrInvalidContinue) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !strings.HasPrefix(key, "/registry/pods/") || rv <= 0 {
			t.Fatalf("token %q decoded to %q rv %d", tok, key, rv)
		}
	})
}
