package auth

import (
	"strings"
	"testing"
)

// FuzzServiceAccountToken: any bearer string never panics the
// service-account authenticator, and authenticates only if its signed part
// (header and payload) is that of a token the issuer signed.
func FuzzServiceAccountToken(f *testing.F) {
	fx := newSAFixture(f)
	valid := fx.token(f, fx.gen, nil, []string{testIssuer}, nil)
	bound := fx.token(f, fx.gen, &fx.pod, []string{testIssuer}, nil)
	signed := func(tok string) string { return tok[:strings.LastIndexByte(tok, '.')] }
	f.Add(valid)
	f.Add(bound)
	f.Add(valid[:len(valid)-3] + "xyz")
	f.Add(signed(valid) + ".")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMifQ.")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		got, err := fx.authenticate(token)
		if got == "" {
			return
		}
		if err != nil {
			t.Fatalf("user %q with error %v", got, err)
		}
		i := strings.LastIndexByte(token, '.')
		if i < 0 || (token[:i] != signed(valid) && token[:i] != signed(bound)) {
			t.Fatalf("%q authenticated as %q", token, got)
		}
	})
}
