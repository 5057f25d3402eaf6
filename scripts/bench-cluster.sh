#!/usr/bin/env bash
# Cluster benchmark: GetRateLimits through all nodes of a 3-node static cluster versus one single node,
# in the same run, on loopback, with h2load (Debian package nghttp2-client). Prints req/s and p50/p99
# per setup and the forwarding batch sizes each cluster node logged on shutdown. Each h2load run is
# cut at 30 s.
#
# Usage: scripts/bench-cluster.sh            (needs service/server/target/weir.jar)
#   N=10000 C=6 M=8      requests per setup, connections (split over the nodes), streams per connection
#   ITEMS=10             rate-limit items per call (distinct keys, spread over the owners)
#   WARMUP=3000          requests per setup before the measured run
#   EXTRA_ENV="WEIR_DISABLE_BATCHING=true"   extra environment for every node
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-10000}
C=${C:-6}
M=${M:-8}
ITEMS=${ITEMS:-10}
WARMUP=${WARMUP:-3000}
JAR=service/server/target/weir.jar

command -v h2load >/dev/null || { echo "h2load not found: apt-get install nghttp2-client" >&2; exit 1; }
[[ -f "$JAR" ]] || { echo "$JAR missing: run ./mvnw -B -q -DskipTests package" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# start_node NAME GRPC_PORT HTTP_PORT STATIC_PEERS PEER_PORT
start_node() {
  env WEIR_GRPC_ADDRESS="127.0.0.1:$2" WEIR_HTTP_ADDRESS="127.0.0.1:$3" WEIR_STATIC_PEERS="$4" \
    WEIR_PEER_ADDRESS="127.0.0.1:$5" WEIR_PEER_SECRET="bench-cluster-peer-secret" \
    WEIR_LOG_LEVEL=info ${EXTRA_ENV:-} java -jar "$JAR" >"$work/$1.log" 2>&1 &
  pids+=($!)
}

await_healthy() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$1/v1/HealthCheck" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "node on http port $1 did not become healthy" >&2; cat "$work"/*.log >&2; exit 1
}

# Keys named by a hash of their index: FNV-1a would place key-0..key-9 next to each other on the ring.
python3 - "$work/body.bin" "$ITEMS" <<'PY'
import hashlib, struct, sys
sys.path.insert(0, "scripts")
from grpc_body import field_bytes, field_varint
out, items = sys.argv[1], int(sys.argv[2])
body = b""
for i in range(items):
    key = hashlib.md5(str(i).encode()).hexdigest()[:12]
    item = (field_bytes(1, b"bench") + field_bytes(2, key.encode()) + field_varint(3, 1)
            + field_varint(4, 1000000000000) + field_varint(5, 3600000))
    body += field_bytes(1, item)
open(out, "wb").write(b"\x00" + struct.pack(">I", len(body)) + body)
PY

# sanity PORT [TRIES]: one call whose items must all be answered without error. A cold JVM's first
# forwarded calls can miss the 500 ms deadline, so the check before a run may be tried again.
sanity() {
  for _ in $(seq 1 "${2:-1}"); do
    curl -s --http2-prior-knowledge -H 'content-type: application/grpc' -H 'te: trailers' \
      --data-binary @"$work/body.bin" -o "$work/resp.bin" "http://127.0.0.1:$1/pb.gubernator.V1/GetRateLimits"
    python3 scripts/grpc_body.py check "$work/resp.bin" >"$work/check.txt" && return 0
    sleep 0.5
  done
  cat "$work/check.txt" >&2; exit 1
}

# drive LABEL GRPC_PORT...: one h2load per node, C split between them, N split between them.
drive() {
  local label=$1; shift
  local n_nodes=$#
  local per_n=$((N / n_nodes)) per_c=$(( (C + n_nodes - 1) / n_nodes ))
  local i=0 loads=()
  for port in "$@"; do
    timeout 30 h2load -n $((WARMUP / n_nodes)) -c "$per_c" -m "$M" --header 'content-type: application/grpc' \
      --header 'te: trailers' -d "$work/body.bin" "http://127.0.0.1:$port/pb.gubernator.V1/GetRateLimits" \
      >/dev/null &
    loads+=($!)
  done
  wait "${loads[@]}"
  local start end
  loads=()
  start=$(date +%s.%N)
  for port in "$@"; do
    timeout 30 h2load -n "$per_n" -c "$per_c" -m "$M" --header 'content-type: application/grpc' \
      --header 'te: trailers' -d "$work/body.bin" --log-file="$work/$label-$i.log" \
      "http://127.0.0.1:$port/pb.gubernator.V1/GetRateLimits" >"$work/$label-$i.out" &
    loads+=($!)
    i=$((i + 1))
  done
  wait "${loads[@]}"
  end=$(date +%s.%N)
  python3 - "$label" "$start" "$end" "$ITEMS" "$work/$label"-*.log <<'PY'
import sys
label, start, end, items, logs = (sys.argv[1], float(sys.argv[2]), float(sys.argv[3]),
                                  int(sys.argv[4]), sys.argv[5:])
lat, ok = [], 0
for path in logs:
    for line in open(path):
        parts = line.split()
        if len(parts) >= 3:
            lat.append(int(parts[2]))
            ok += parts[1] == "200"
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(p / 100 * len(lat)))] / 1000
print("%-8s %8d calls  %8.0f calls/s  %8.0f items/s  p50=%.2f ms  p99=%.2f ms  (http 200: %d)"
      % (label, len(lat), len(lat) / (end - start), len(lat) / (end - start) * items,
         pct(50), pct(99), ok))
PY
}

echo "cpus=$(nproc) N=$N C=$C M=$M ITEMS=$ITEMS ${EXTRA_ENV:-}"

single_g=$(free_port); single_h=$(free_port)
start_node single "$single_g" "$single_h" "" "$(free_port)"
await_healthy "$single_h"
sanity "$single_g" 20
drive single "$single_g"
sanity "$single_g"
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true; pids=()

g=(); h=(); p=()
for i in 0 1 2; do g+=("$(free_port)"); h+=("$(free_port)"); p+=("$(free_port)"); done
peers="127.0.0.1:${g[0]}@${p[0]},127.0.0.1:${g[1]}@${p[1]},127.0.0.1:${g[2]}@${p[2]}"
for i in 0 1 2; do start_node "node$i" "${g[$i]}" "${h[$i]}" "$peers" "${p[$i]}"; done
for i in 0 1 2; do await_healthy "${h[$i]}"; done
for i in 0 1 2; do sanity "${g[$i]}" 20; done
drive cluster "${g[0]}" "${g[1]}" "${g[2]}"
for i in 0 1 2; do sanity "${g[$i]}"; done
echo "items answered without error before and after each run"
for p in "${pids[@]}"; do kill "$p"; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
echo "forwarding batches (logged by each node on shutdown):"
grep -h "peer forwarding" "$work"/node*.log | sed 's/.*peer forwarding: /  /'
