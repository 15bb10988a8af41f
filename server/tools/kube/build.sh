#!/usr/bin/env bash
# Builds a real kube-apiserver (k8s.io/kubernetes at KUBE_VERSION) for
# side-by-side comparisons and the e2e suites that run against it.
#
#   server/tools/kube/build.sh            # -> server/.cache/kube/bin/kube-apiserver
#                                  #    and ~/.cache/listwatch/kube-apiserver
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod
# points every staging module (k8s.io/api, k8s.io/apiserver, …) at a
# directory inside its own tree. This script makes a scratch module outside
# the repository's modules that requires k8s.io/kubernetes and replaces each
# staging module with its published release (v0.X.Y for v1.X.Y), then
# builds the command. Takes 10–30 minutes on 2 cores with a cold cache.
set -euo pipefail
cd "$(dirname "$0")/../.."
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
STAGING_VERSION="v0${KUBE_VERSION#v1}"
out="$PWD/.cache/kube"
mod="$out/module"
mkdir -p "$mod" "$out/bin"

# The scratch module is its own build, outside the repository's workspace.
export GOWORK=off GOFLAGS="-mod=mod"
go mod download "k8s.io/kubernetes@$KUBE_VERSION"
kgomod="$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION/go.mod"

{
  echo "module listwatch.local/kubebuild"
  echo
  grep -m1 '^go ' "$kgomod"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  sed -n 's|^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*|\t\1 => \1 '"$STAGING_VERSION"'|p' "$kgomod"
  echo ")"
} > "$mod/go.mod"
cat > "$mod/tools.go" <<'GO'
//go:build tools

package kubebuild

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO

cd "$mod"
go mod tidy >/dev/null 2>&1 || go mod tidy
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
ver=k8s.io/component-base/version
go build -trimpath -o "$out/bin/kube-apiserver" \
  -ldflags "-X $ver.gitVersion=$KUBE_VERSION -X $ver.gitMajor=1 -X $ver.gitMinor=$minor -X $ver.gitTreeState=clean" \
  k8s.io/kubernetes/cmd/kube-apiserver
"$out/bin/kube-apiserver" --version
# A copy outside the work tree, so that other clones on this machine (CI's
# among them) run the suites against it too.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/listwatch"
mkdir -p "$cache"
cp "$out/bin/kube-apiserver" "$cache/kube-apiserver.tmp" && mv "$cache/kube-apiserver.tmp" "$cache/kube-apiserver"
