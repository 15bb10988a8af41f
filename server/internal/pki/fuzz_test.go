package pki

import (
	"testing"
	"time"
)

// FuzzParseKeyPair: parseKeyPair never panics, and whatever it accepts is a
// certificate with the matching private key.
func FuzzParseKeyPair(f *testing.F) {
	ca, err := newCA(time.Now())
	if err != nil {
		f.Fatal(err)
	}
	other, err := newCA(time.Now())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ca.CertPEM, ca.KeyPEM)
	f.Add(ca.CertPEM, other.KeyPEM)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), ca.KeyPEM)
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, certPEM, keyPEM []byte) {
		kp, err := parseKeyPair(certPEM, keyPEM)
		if err != nil {
			return
		}
		if !kp.Key.PublicKey.Equal(kp.Cert.PublicKey) {
			t.Fatal("accepted a key that does not match the certificate")
		}
	})
}

// FuzzFindAdminToken: a token is only ever found on a line for admin in
// system:masters, and appending one to any parseable file makes it findable.
func FuzzFindAdminToken(f *testing.F) {
	f.Add([]byte(`tok,admin,admin,"system:masters"` + "\n"))
	f.Add([]byte(`tok,admin,admin,"dev,system:masters,ops"`))
	f.Add([]byte(`tok,bob,1` + "\n\n" + `"q""uoted",admin,x,system:masters`))
	f.Add([]byte(`"unterminated`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := findAdminToken(data)
		if err != nil || tok != "" {
			return
		}
		path := t.TempDir() + "/tokens.csv"
		if err := writeFileAtomic(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ensureAdminToken(path)
		if err != nil {
			// A file csv can read may still end inside a quoted field once a
			// newline is appended only if it was unterminated; ReadAll would
			// have failed above, so this is a bug.
			t.Fatalf("ensureAdminToken: %v", err)
		}
		again, err := ensureAdminToken(path)
		if err != nil || again != got {
			t.Fatalf("second ensureAdminToken = %q, %v; want %q", again, err, got)
		}
	})
}
