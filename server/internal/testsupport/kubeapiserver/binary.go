package kubeapiserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// EnvBinary names the environment variable that overrides where the
// kube-apiserver binary is.
const EnvBinary = "LISTWATCH_KUBE_APISERVER"

// ErrNotBuilt means no kube-apiserver binary was found. Tests skip on it.
var ErrNotBuilt = errors.New("kube-apiserver not built: run server/tools/kube/build.sh")

// Binary returns the path of the kube-apiserver to run: $EnvBinary when
// set (it must exist), else .cache/kube/bin/kube-apiserver at the root of
// the repository this package was compiled from, else the one under the
// module root found by walking up from the working directory, else the
// copy server/tools/kube/build.sh leaves in the user's cache directory
// (~/.cache/listwatch/kube-apiserver), which a fresh clone on the same
// machine finds too.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%w: $%s=%s: %w", ErrNotBuilt, EnvBinary, p, err)
		}
		return p, nil
	}
	var roots []string
	if root, ok := sourceRoot(); ok {
		roots = append(roots, root)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				roots = append(roots, d)
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	var candidates []string
	for _, r := range roots {
		candidates = append(candidates, filepath.Join(r, ".cache", "kube", "bin", "kube-apiserver"))
	}
	if dir, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, filepath.Join(dir, "listwatch", "kube-apiserver"))
	}
	for _, p := range candidates {
		if executable(p) == nil {
			return filepath.Clean(p), nil
		}
	}
	return "", ErrNotBuilt
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: %w", p, exec.ErrNotFound)
	}
	return nil
}

// sourceRoot is the root of the repository this file was compiled from:
// three levels up from internal/testsupport/kubeapiserver.
func sourceRoot() (string, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", false
	}
	return filepath.Join(filepath.Dir(file), "..", "..", ".."), true
}
