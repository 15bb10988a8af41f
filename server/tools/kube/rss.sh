#!/usr/bin/env bash
# Resident memory of listwatch serve and of kube-apiserver + its etcd
# holding the same N ConfigMaps (~1 KiB), one after the other on this
# machine: each server is started, filled by "listwatch bench list --keep",
# then measured right after and again STEADY seconds later (after Go's
# periodic GC and the scavenger). serve runs without controllers, as the
# kube-apiserver here runs without a controller manager.
#
#   N=100000 server/tools/kube/rss.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${N:-100000}"
STEADY="${STEADY:-150}"
tmp="$(mktemp -d -t listwatch-rss-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rss() { awk '/^(VmRSS|RssAnon|RssFile):/{printf "%s %d MiB  ", $1, $2/1024}' "/proc/$1/status"; }
fill() { "$tmp/listwatch" bench list --kubeconfig "$1" --objects "$N" --create-workers 16 --keep \
  --page-sizes 500,0 --repeat 1 --rv-modes unset >"$tmp/bench.out"; }

go build -o "$tmp/listwatch" ./cmd/listwatch

"$tmp/listwatch" serve --data-dir "$tmp/serve" --secure-port -1 --controllers= >"$tmp/serve.log" 2>&1 &
sp=$!
pids+=("$sp")
until [ -f "$tmp/serve/kubeconfig" ] && kubectl --kubeconfig "$tmp/serve/kubeconfig" get --raw /readyz >/dev/null 2>&1; do
  kill -0 "$sp" || { cat "$tmp/serve.log" >&2; exit 1; }
  sleep 0.5
done
fill "$tmp/serve/kubeconfig"
echo "listwatch serve, $N objects, after fill:   $(rss "$sp")"
sleep "$STEADY"
echo "listwatch serve, $N objects, ${STEADY}s later: $(rss "$sp")"
kill -TERM "$sp"; wait "$sp" || true
pids=()

tools/kube/run.sh --dir "$tmp/kube" --ready-file "$tmp/ready" >/dev/null &
kp=$!
pids+=("$kp")
until [ -f "$tmp/ready" ]; do kill -0 "$kp" || exit 1; sleep 0.5; done
# shellcheck disable=SC1091
. "$tmp/ready"
# run.sh execs the helper that embeds etcd and starts kube-apiserver.
fill "$KUBECONFIG"
echo "kube-apiserver, $N objects, after fill:   $(rss "$KUBE_APISERVER_PID") etcd (helper): $(rss "$kp")"
sleep "$STEADY"
echo "kube-apiserver, $N objects, ${STEADY}s later: $(rss "$KUBE_APISERVER_PID") etcd (helper): $(rss "$kp")"
