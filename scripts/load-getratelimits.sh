#!/usr/bin/env bash
# Drives pb.gubernator.V1/GetRateLimits on one node with h2load (Debian package nghttp2-client) and
# prints req/s and latency percentiles. Loopback only; bounded (each h2load run is cut at 30 s).
#
# Usage: scripts/load-getratelimits.sh
#   WEIR_TARGET=127.0.0.1:1051  use a running node's gRPC address instead of starting weir.jar
#   N=200000 C=16 M=32          requests, connections, concurrent streams per connection
#   ITEMS=1                     rate-limit items per GetRateLimits call
#   KEY=hot                     unique_key (ITEMS>1: KEY-0 .. KEY-<ITEMS-1>)
#   WARMUP=50000                requests sent before the measured run (JIT warm-up)
#   ALLOW_ITEM_ERRORS=1         go on even when the sanity call's items carry errors
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-200000}
C=${C:-16}
M=${M:-32}
ITEMS=${ITEMS:-1}
KEY=${KEY:-hot}
WARMUP=${WARMUP:-50000}
JAR=service/server/target/weir.jar

command -v h2load >/dev/null || { echo "h2load not found: apt-get install nghttp2-client" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 not found" >&2; exit 1; }

work=$(mktemp -d)
node_pid=""
cleanup() {
  if [[ -n "$node_pid" ]]; then kill "$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

if [[ -n "${WEIR_TARGET:-}" ]]; then
  target=$WEIR_TARGET
else
  [[ -f "$JAR" ]] || { echo "$JAR missing: run ./mvnw -B -q -DskipTests package" >&2; exit 1; }
  grpc_port=$(free_port)
  http_port=$(free_port)
  target=127.0.0.1:$grpc_port
  WEIR_GRPC_ADDRESS=$target WEIR_HTTP_ADDRESS=127.0.0.1:$http_port WEIR_LOG_LEVEL=warn \
    java -jar "$JAR" >"$work/node.log" 2>&1 &
  node_pid=$!
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$http_port/v1/HealthCheck" >/dev/null 2>&1; then break; fi
    kill -0 "$node_pid" 2>/dev/null || { cat "$work/node.log" >&2; exit 1; }
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$http_port/v1/HealthCheck" >/dev/null || { echo "node did not become healthy" >&2; exit 1; }
fi

# Limit high enough that every call stays UNDER_LIMIT: the run measures the decision path, not refusals.
python3 scripts/grpc_body.py encode "$work/body.bin" "$ITEMS" load "$KEY" 1 1000000000000 3600000

url="http://$target/pb.gubernator.V1/GetRateLimits"
echo "sanity call to $url:"
curl -s --http2-prior-knowledge -H 'content-type: application/grpc' -H 'te: trailers' \
  --data-binary @"$work/body.bin" -D "$work/headers.txt" -o "$work/resp.bin" "$url"
grep -i '^grpc-status: 0' "$work/headers.txt" >/dev/null || { echo "gRPC call failed:" >&2; cat "$work/headers.txt" >&2; exit 1; }
if ! python3 scripts/grpc_body.py check "$work/resp.bin"; then
  echo "items answered with errors" >&2
  [[ "${ALLOW_ITEM_ERRORS:-}" == 1 ]] || exit 1
fi

h2() {
  timeout 30 h2load -n "$1" -c "$C" -m "$M" \
    --header 'content-type: application/grpc' --header 'te: trailers' -d "$work/body.bin" "${@:2}" "$url"
}

echo "warm-up: $WARMUP requests"
h2 "$WARMUP" >/dev/null
echo "run: N=$N C=$C M=$M ITEMS=$ITEMS cpus=$(nproc)"
h2 "$N" --log-file="$work/requests.log" | tee "$work/h2load.txt" | grep -E '^(finished in|requests:|status codes:)'

python3 - "$work/requests.log" <<'PY'
import sys
lat = sorted(int(line.split()[2]) for line in open(sys.argv[1]) if line.strip())
def pct(p): return lat[min(len(lat) - 1, int(p / 100 * len(lat)))] / 1000
print("latency ms: p50=%.3f p90=%.3f p99=%.3f p99.9=%.3f max=%.3f (n=%d)"
      % (pct(50), pct(90), pct(99), pct(99.9), lat[-1] / 1000, len(lat)))
PY
