#!/usr/bin/env bash
# Envoy ShouldRateLimit benchmark: h2load sends one gRPC-framed RateLimitRequest with two descriptors
# at 64 concurrent streams (4 connections x 16 streams) for DURATION seconds against
#   (a) the do-nothing ShouldRateLimit server (NoopRateLimitServer, the baseline) and
#   (b) a Weir node (service/server/target/weir.jar) with scripts/bench-envoy.yaml as WEIR_ENVOY_CONFIG,
# in the same run, on 127.0.0.1 only. Prints h2load's summary for each and the ratio of req/s.
# Usage: scripts/bench-envoy.sh [DURATION_SECONDS (default 20, at most 30)]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-20}"
if (( DURATION > 30 )); then DURATION=30; fi
WARMUP=5
command -v h2load >/dev/null || { echo "h2load missing: apt-get install -y nghttp2-client" >&2; exit 1; }
JAR=service/server/target/weir.jar
[[ -f "$JAR" ]] || ./mvnw -B -q -o -DskipTests package
WORK=$(mktemp -d)
./mvnw -B -q -o -pl envoy-adapter -am test-compile dependency:build-classpath \
  -Dmdep.outputFile="$WORK/cp.txt" -Dmdep.includeScope=test >/dev/null
CP="envoy-adapter/target/test-classes:envoy-adapter/target/classes:$(cat "$WORK/cp.txt")"
QUIET="-Dlogback.configurationFile=$PWD/scripts/bench-logback.xml"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

java "$QUIET" -cp "$CP" dev.weir.envoy.bench.NoopRateLimitServer request "$WORK/request.bin"
PATH_RLS=/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit
run() { # name port
  h2load -c 4 -m 16 -t 1 -D "$WARMUP" -d "$WORK/request.bin" -H 'content-type: application/grpc' \
    -H 'te: trailers' "http://127.0.0.1:$2$PATH_RLS" >/dev/null
  h2load -c 4 -m 16 -t 1 -D "$DURATION" -d "$WORK/request.bin" -H 'content-type: application/grpc' \
    -H 'te: trailers' --log-file="$WORK/$1-requests.log" "http://127.0.0.1:$2$PATH_RLS" | tee "$WORK/$1.txt" \
    | grep -E '^(finished in|requests:|status codes:)'
  python3 - "$WORK/$1-requests.log" <<'PY'
import sys
lat = sorted(int(line.split()[2]) for line in open(sys.argv[1]) if line.strip())
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] / 1000
print("latency ms: p50=%.3f p90=%.3f p99=%.3f max=%.3f (n=%d)" % (q(.5), q(.9), q(.99), lat[-1] / 1000, len(lat)))
PY
}

NOOP_PORT=$(free_port)
java -Xmx512m "$QUIET" -cp "$CP" dev.weir.envoy.bench.NoopRateLimitServer serve "$NOOP_PORT" >"$WORK/noop.log" 2>&1 &
PIDS+=($!)
wait_port "$NOOP_PORT"
echo "== (a) do-nothing ShouldRateLimit server"
run noop "$NOOP_PORT"
kill "${PIDS[0]}"; PIDS=()

GRPC_PORT=$(free_port); HTTP_PORT=$(free_port)
WEIR_GRPC_ADDRESS="127.0.0.1:$GRPC_PORT" WEIR_HTTP_ADDRESS="127.0.0.1:$HTTP_PORT" \
  WEIR_ENVOY_CONFIG="$PWD/scripts/bench-envoy.yaml" WEIR_LOG_LEVEL=warn \
  java -Xmx512m -jar "$JAR" >"$WORK/weir.log" 2>&1 &
PIDS+=($!)
wait_port "$GRPC_PORT" || { cat "$WORK/weir.log"; exit 1; }
echo "== (b) Weir node"
run weir "$GRPC_PORT"

rps() { awk '/^finished in/ {gsub(",","",$4); print $4}' "$1"; }
echo "== summary"
printf 'noop req/s %s\nweir req/s %s\n' "$(rps "$WORK/noop.txt")" "$(rps "$WORK/weir.txt")"
awk -v a="$(rps "$WORK/noop.txt")" -v b="$(rps "$WORK/weir.txt")" 'BEGIN {printf "ratio %.1f%%\n", 100*b/a}'
