#!/usr/bin/env bash
# writes.sh: creates, updates and deletes per second, and the server CPU
# each costs, of listwatch serve and of kube-apiserver + etcd on this
# machine, in alternating rounds ("listwatch bench write" against each).
#
#   ROUNDS=3 WRITES=2000 WORKERS=16 server/tools/kube/writes.sh
#   PIN=1 server/tools/kube/writes.sh   # servers on CPU 0, clients on CPU 1
#
# With PIN=1 each server (serve; kube-apiserver and its etcd together)
# runs on the first CPU only and the clients on the second, so what is
# measured is what one core of server does, as where an API server does
# not share its CPUs with its clients; without it everything shares all
# CPUs and the clients' own CPU limits both servers alike.
#
# Both servers run as their own processes, started once and idle while the
# other is measured. serve's CPU covers its embedded etcd; kube-apiserver's
# adds its etcd's (the helper process that embeds it). Each round creates,
# updates and deletes WRITES ConfigMaps of ~1 KiB with listwatch's client
# (JSON) and then client-go's (protobuf), so both servers hold the same
# few objects throughout. Extra arguments go to "bench write".
#
# It ends with serve's ops/s over kube's per client and operation: the
# lowest and highest of the rounds, and over all rounds together (kube's
# total time for them over serve's). On a shared machine single rounds
# move by ±15% with the neighbours; the overall figure is the steadier.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-3}"
PIN="${PIN:-}"
server_cpu=() client_cpu=()
if [ -n "$PIN" ]; then server_cpu=(taskset -c 0) client_cpu=(taskset -c 1); fi
WRITES="${WRITES:-2000}"
WORKERS="${WORKERS:-16}"
tmp="$(mktemp -d -t listwatch-writes-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go build -o "$tmp/listwatch" ./cmd/listwatch

"${server_cpu[@]}" "$tmp/listwatch" serve --data-dir "$tmp/serve" --secure-port -1 --controllers= >"$tmp/serve.log" 2>&1 &
sp=$!
pids+=("$sp")
until [ -f "$tmp/serve/kubeconfig" ] &&
  kubectl --kubeconfig "$tmp/serve/kubeconfig" get --raw /readyz >/dev/null 2>&1; do
  kill -0 "$sp" || { cat "$tmp/serve.log" >&2; exit 1; }
  sleep 0.5
done

"${server_cpu[@]}" tools/kube/run.sh --dir "$tmp/kube" --ready-file "$tmp/ready" >/dev/null &
kp=$!
pids+=("$kp")
until [ -f "$tmp/ready" ]; do kill -0 "$kp" || exit 1; sleep 0.5; done
. "$tmp/ready"

# cpu_ticks: user+system clock ticks the given processes have used.
cpu_ticks() {
  local t=0 p
  for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "$t"
}
# settle waits (up to 30 s) until the given processes, the server not
# being measured next, use under a tenth of a CPU, so that the work a
# round left them does not count against the other server.
settle() {
  local hz before after i
  hz="$(getconf CLK_TCK)"
  for i in $(seq 1 60); do
    before="$(cpu_ticks "$@")"
    sleep 0.5
    after="$(cpu_ticks "$@")"
    [ $((after - before)) -le $((hz / 20)) ] && return 0
  done
}
bench() {
  "${client_cpu[@]}" "$tmp/listwatch" bench write --writes "$WRITES" --workers "$WORKERS" "$@" >"$tmp/bench.out" 2>"$tmp/bench.err" ||
    { cat "$tmp/bench.err" >&2; exit 1; }
  sed -n '/^WRITES/,$p' "$tmp/bench.out" | tee -a "$tmp/all.out"
}
for r in $(seq 1 "$ROUNDS"); do
  settle "$KUBE_APISERVER_PID" "$kp"
  echo "== round $r: listwatch serve (pid $sp)" | tee -a "$tmp/all.out"
  bench --kubeconfig "$tmp/serve/kubeconfig" --server-pid "$sp" --namespace "listwatch-writes-$r" "${@}"
  settle "$sp"
  echo "== round $r: kube-apiserver (pid $KUBE_APISERVER_PID) + etcd (pid $kp)" | tee -a "$tmp/all.out"
  bench --kubeconfig "$KUBECONFIG" --server-pid "$KUBE_APISERVER_PID" --store-pid "$kp" --namespace "listwatch-writes-$r" "${@}"
done

# The summary: per client and operation, serve's ops/s over kube's in
# each round (lowest–highest), and over all rounds together (the time
# kube took for all of them over the time serve took).
echo "== serve / kube-apiserver, ops per second"
printf "%10s %7s %13s %9s\n" client op "per round" overall
awk '
  /^== round/ { r = $3; srv = ($4 == "listwatch") ? "serve" : "kube"; next }
  $2 == "create" || $2 == "update" || $2 == "delete" {
    k = $1 " " $2; rate[r, srv, k] = $4; t[srv, k] += $3 / $4; keys[k] = 1; rounds[r] = 1
  }
  END {
    for (k in keys) {
      lo = ""; hi = ""
      for (r in rounds) {
        if (rate[r, "kube", k] == "" || rate[r, "serve", k] == "") continue
        x = rate[r, "serve", k] / rate[r, "kube", k]
        if (lo == "" || x < lo) lo = x
        if (hi == "" || x > hi) hi = x
      }
      split(k, kk, " ")
      printf "%10s %7s %6.2f–%-5.2f %8.2f×\n", kk[1], kk[2], lo, hi, t["kube", k] / t["serve", k]
    }
  }' "$tmp/all.out" | sort -k1,1r -k2,2
