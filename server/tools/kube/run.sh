#!/usr/bin/env bash
# Starts a real kube-apiserver (built by server/tools/kube/build.sh, or the one
# $LISTWATCH_KUBE_APISERVER names) with an embedded etcd, both on
# 127.0.0.1, in the foreground. Prints the admin kubeconfig's path on
# stdout; Ctrl-C (or SIGTERM) stops both and removes the temporary files.
#
#   server/tools/kube/run.sh                       # temp dir, removed on exit
#   server/tools/kube/run.sh --dir /tmp/kube       # keep state in /tmp/kube
#   server/tools/kube/run.sh --ready-file F        # write KUBECONFIG=… to F once ready
#   server/tools/kube/run.sh -- --v=2              # extra kube-apiserver flags
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .cache/kube/bin
go build -o .cache/kube/bin/kube-run ./tools/kube/run
exec .cache/kube/bin/kube-run "$@"
