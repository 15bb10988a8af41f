#!/usr/bin/env bash
# Runs "listwatch bench" against a real kube-apiserver: starts one with
# server/tools/kube/run.sh, runs the benchmark with the given arguments and the
# server's kubeconfig (and pid, for its CPU time), then stops the server.
#
#   server/tools/kube/bench.sh informer --objects 2000
#   server/tools/kube/bench.sh list --objects 5000 --json
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$#" -eq 0 ]; then
  echo "usage: server/tools/kube/bench.sh <bench subcommand> [flags...]" >&2
  exit 2
fi
tmp="$(mktemp -d -t kube-bench-XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go build -o "$tmp/listwatch" ./cmd/listwatch
tools/kube/run.sh --dir "$tmp/server" --ready-file "$tmp/ready" >/dev/null &
pid=$!
while [ ! -f "$tmp/ready" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" || true
    pid=""
    echo "bench.sh: kube-apiserver did not start" >&2
    exit 1
  fi
  sleep 0.2
done
# shellcheck disable=SC1091
. "$tmp/ready"
"$tmp/listwatch" bench "$@" --kubeconfig "$KUBECONFIG" --server-pid "$KUBE_APISERVER_PID"
