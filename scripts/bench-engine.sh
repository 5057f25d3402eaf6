#!/usr/bin/env bash
# Runs the engine and store JMH benchmarks (service/core/src/test/java/dev/weir/core/bench) and the
# bytes-per-bucket measurement. Extra arguments go to JMH, e.g. a benchmark regex:
#   scripts/bench-engine.sh EngineBenchmark
# Defaults keep the whole run under 3 minutes: -wi 2 -i 3 -f 1 -w 1s -r 2s.
set -euo pipefail
cd "$(dirname "$0")/.."

offline=()
if [[ "${WEIR_BENCH_OFFLINE:-true}" == "true" ]]; then offline=(-o); fi

./mvnw -B -q "${offline[@]}" -pl service/core -am test-compile dependency:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile=target/bench.classpath
cp="service/core/target/test-classes:service/core/target/classes:$(cat service/core/target/bench.classpath)"

jmh_args=(-wi 2 -i 3 -f 1 -w 1s -r 2s -rf json -rff service/core/target/jmh-result.json)
if [[ $# -gt 0 ]]; then
  java -cp "$cp" org.openjdk.jmh.Main "${jmh_args[@]}" "$@"
else
  java -cp "$cp" org.openjdk.jmh.Main "${jmh_args[@]}" 'dev.weir.core.bench.*'
  for algorithm in TOKEN_BUCKET LEAKY_BUCKET FIXED_WINDOW SLIDING_WINDOW; do
    java -Xmx2g -cp "$cp" dev.weir.core.bench.BucketMemoryMain 1000000 "$algorithm"
  done
fi
