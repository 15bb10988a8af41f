package pki

import (
	"bytes"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// ensureAdminToken returns the token of the first admin line of the static
// token file at path, appending a new line (and creating the file) when
// there is none. Other lines are kept as they are.
func ensureAdminToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("pki: %w", err)
	}
	if tok, err := findAdminToken(data); err != nil {
		return "", fmt.Errorf("pki: %s: %w", path, err)
	} else if tok != "" {
		return tok, nil
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("pki: token: %w", err)
	}
	tok := hex.EncodeToString(raw[:])
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	var line bytes.Buffer
	w := csv.NewWriter(&line)
	// The group column is quoted by hand: Kubernetes' files always quote
	// it, and csv.Writer would only quote a list of several groups.
	_ = w.Write([]string{tok, AdminUser, AdminUser})
	w.Flush()
	data = append(data, strings.TrimSuffix(line.String(), "\n")...)
	data = append(data, `,"`+AdminGroup+`"`+"\n"...)
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return "", err
	}
	return tok, nil
}

// findAdminToken reads the file as Kubernetes does (encoding/csv, variable
// field count) and returns the token of the first line for user admin in
// group system:masters.
func findAdminToken(data []byte) (string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return "", err
	}
	for _, rec := range recs {
		if len(rec) >= 4 && rec[0] != "" && rec[1] == AdminUser &&
			slices.Contains(strings.Split(rec[3], ","), AdminGroup) {
			return rec[0], nil
		}
	}
	return "", nil
}
