#!/usr/bin/env bash
# The hand-off measurement (dev.weir.core.cluster.HandOffBenchMain in core test sources): three in-JVM
# nodes, one key limited to 100 per 10 s, steady round-robin load at 5x the limit, each node restarted
# in turn; prints admitted/limit per window with hand-off on and off. About one minute.
set -euo pipefail
cd "$(dirname "$0")/.."

offline=()
if [[ "${WEIR_BENCH_OFFLINE:-true}" == "true" ]]; then offline=(-o); fi

./mvnw -B -q "${offline[@]}" -pl service/core -am test-compile dependency:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile=target/bench.classpath
cp="service/core/target/test-classes:service/core/target/classes:$(cat service/core/target/bench.classpath)"

java -Dlogback.configurationFile=scripts/bench-logback.xml -cp "$cp" dev.weir.core.cluster.HandOffBenchMain
