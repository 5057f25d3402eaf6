#!/usr/bin/env bash
# The CPU of one request-and-answer exchange between two JVMs on one core, by transport
# (docs/benchmarks.md, "What any peer transport costs on one core"): blocking sockets, Netty's epoll
# event loop with length-prefixed frames, and a grpc-java bidirectional stream. Both processes are
# pinned to CPU 1, as the two nodes of scripts/bench_forward.py are; the client keeps one message of
# SIZE bytes in flight and the server echoes it. ROUNDS rounds alternate the three transports so that a
# drift in the machine's speed falls on all alike; prints each run, then each transport's median.
#
# Usage: scripts/bench-transport-floor.sh [JAR]   (default service/server/target/weir.jar; its
#   grpc-java and Netty are the ones used)
#   SIZE=1000 ROUNDS=3 WARMUP=10 MEASURE=5 KINDS="socket netty grpc"
set -euo pipefail
cd "$(dirname "$0")/.."

JAR=${1:-service/server/target/weir.jar}
SIZE=${SIZE:-1000}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-10}
MEASURE=${MEASURE:-5}
KINDS=${KINDS:-socket netty grpc}
[[ -f "$JAR" ]] || { echo "$JAR missing: run ./mvnw -B -q -DskipTests package" >&2; exit 1; }
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 not found" >&2; exit 1; }

work=$(mktemp -d)
server=""
cleanup() {
  if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# Compiled once, so that no run pays the source launcher's compilation.
javac -nowarn -cp "$JAR" -d "$work" scripts/TransportFloor.java
cp="$JAR:$work"
for round in $(seq "$ROUNDS"); do
  for kind in $KINDS; do
    port=$(free_port)
    taskset -c 1 java -Xmx256m -cp "$cp" TransportFloor server "$kind" "$port" &
    server=$!
    for _ in $(seq 50); do
      (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
      sleep 0.1
    done
    kill -0 "$server" 2>/dev/null || { echo "the $kind server did not start on port $port" >&2; exit 1; }
    taskset -c 1 java -Xmx256m -cp "$cp" TransportFloor client "$kind" "$port" "$SIZE" "$server" \
      "$WARMUP" "$MEASURE" | tee -a "$work/runs"
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
  done
done
echo "median CPU us per exchange (client + server), $ROUNDS rounds, $SIZE-byte messages:"
for kind in $KINDS; do
  grep "^$kind " "$work/runs" | sed 's/.*cpu_us=\([0-9.]*\).*/\1/' | sort -n \
    | awk -v k="$kind" '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
        printf "  %-6s %.2f (min %.2f, max %.2f)\n", k, m, v[1], v[NR]}'
done
