#!/usr/bin/env bash
# The snapshot measurement (dev.weir.core.cluster.snapshot.SnapshotBenchMain in core test sources):
# saves N token buckets (default 1 000 000) to a WEIR_SNAPSHOT_DIR file and loads them back into an
# empty store; prints the time of each step, the file size and the heap after loading. Usage:
# scripts/bench-snapshot.sh [N]. About half a minute; JAVA_OPTS default to -Xmx2g.
set -euo pipefail
cd "$(dirname "$0")/.."

offline=()
if [[ "${WEIR_BENCH_OFFLINE:-true}" == "true" ]]; then offline=(-o); fi

./mvnw -B -q "${offline[@]}" -pl service/core -am test-compile dependency:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile=target/bench.classpath
cp="service/core/target/test-classes:service/core/target/classes:$(cat service/core/target/bench.classpath)"

java ${JAVA_OPTS:--Xmx2g} -Dlogback.configurationFile=scripts/bench-logback.xml -cp "$cp" dev.weir.core.cluster.snapshot.SnapshotBenchMain "$@"
