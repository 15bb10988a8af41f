package storage

import (
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
	if _, _, err := DecodeContinue(tok, "/registry/secrets/"); !errors.Is(err, ErrInvalidContinue) {
		t.Fatalf("foreign token accepted: %v", err)
	}
	for _, bad := range []string{"", "!!", "e30", tok[:len(tok)-3]} {
		if _, _, err := DecodeContinue(bad, "/registry/configmaps/"); !errors.Is(err, ErrInvalidContinue) {
			t.Errorf("%q: got %v", bad, err)
		}
	}
	if _, err := EncodeContinue("/registry/a/", "/registry/b/x", 1); err == nil {
		t.Fatal("key outside prefix encoded")
	}
}

// FuzzDecodeContinue: no token, however crafted, decodes to a key outside
// the request's prefix.
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
		if !strings.HasPrefix(key, "/registry/pods/") || key == "/registry/pods/" || rv <= 0 {
			t.Fatalf("token %q decoded to %q rv %d", tok, key, rv)
		}
	})
}
