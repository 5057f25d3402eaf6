#!/usr/bin/env bash
# Slow and idle HTTP clients against one node (docs/reliability.md, "Slow and idle HTTP clients"):
# starts the node from JAR on loopback, then runs scripts/SlowClients.java four times: no attack,
# 500 connections trickling header lines (one every 5 s), 500 connections trickling a body (one
# byte every 5 s), and IDLE_CONNECTIONS connections that send nothing; legitimate requests at 10/s
# throughout (IDLE_CONNECTIONS needs as many file descriptors: ulimit -n). Loopback only; each run is
# SECONDS_PER_RUN long.
#
# Usage: scripts/slow-clients.sh [JAR]   (default service/server/target/weir.jar)
#   SECONDS_PER_RUN=30 CONNECTIONS=500 IDLE_CONNECTIONS=12000
#   EXTRA_ENV="WEIR_HTTP_HEADER_TIMEOUT=10s"
set -euo pipefail
cd "$(dirname "$0")/.."

JAR=${1:-service/server/target/weir.jar}
RUN=${SECONDS_PER_RUN:-30}
CONNECTIONS=${CONNECTIONS:-500}
IDLE_CONNECTIONS=${IDLE_CONNECTIONS:-12000}
[[ -f "$JAR" ]] || { echo "$JAR missing: run ./mvnw -B -q -DskipTests package" >&2; exit 1; }

work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck disable=SC2086
env WEIR_GRPC_ADDRESS=127.0.0.1:$((port + 1)) WEIR_HTTP_ADDRESS=127.0.0.1:$port ${EXTRA_ENV:-} \
  java -Xmx512m -jar "$JAR" >"$work/node.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/v1/LiveCheck" >/dev/null 2>&1 && break
  sleep 0.2
done

for mode in none headers body; do
  java scripts/SlowClients.java "$port" "$mode" "$RUN" "$CONNECTIONS"
  sleep 6
done
java scripts/SlowClients.java "$port" idle "$RUN" "$IDLE_CONNECTIONS"
echo "node log: $(grep -c ERROR "$work/node.log" || true) ERROR lines, $(wc -l <"$work/node.log") lines"
