package kubeapiserver

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/csv"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
)

// Identity of the ordinary (non-admin) user in the static token file: no
// group but system:authenticated, which kube adds, so RBAC grants it only
// what the default discovery roles do.
const (
	UserName = "alice"
	UserUID  = "alice-uid"
)

// writeServiceAccountKey writes a new ECDSA P-256 key (PEM, 0600):
// kube-apiserver signs service-account tokens with it and verifies them
// with its public half.
func writeServiceAccountKey(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("kubeapiserver: service-account key: %w", err)
	}
	// SEC 1 ("EC PRIVATE KEY"): kube reads the public half from it for
	// --service-account-key-file, which it does not do for PKCS#8.
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("kubeapiserver: service-account key: %w", err)
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// appendUserToken returns the token of UserName in the static token file,
// adding a line for it (token,user,uid, no groups) when there is none, so
// that a restart on the same directory keeps the user's token.
func appendUserToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("kubeapiserver: %w", err)
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return "", fmt.Errorf("kubeapiserver: %s: %w", path, err)
	}
	for _, rec := range recs {
		if len(rec) >= 2 && rec[0] != "" && rec[1] == UserName {
			return rec[0], nil
		}
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("kubeapiserver: token: %w", err)
	}
	tok := hex.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("kubeapiserver: %w", err)
	}
	if _, err := fmt.Fprintf(f, "%s,%s,%s\n", tok, UserName, UserUID); err != nil {
		f.Close()
		return "", fmt.Errorf("kubeapiserver: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("kubeapiserver: %w", err)
	}
	return tok, nil
}
