#!/usr/bin/env bash
# Fuzzes one of Weir's fuzz tests for longer than `./mvnw verify` does (docs/reliability.md#fuzzing).
#
#   scripts/fuzz.sh TARGET [SECONDS]
#
# TARGET is one of: yaml, envoy-grpc, envoy-json, native-grpc, native-json, peer. SECONDS defaults to 600.
# The corpus grows in MODULE/.cifuzz-corpus/ (git-ignored) and carries over to the next session; a finding is
# written as crash-<sha1> next to the seeds in MODULE/src/test/resources/.../<Class>Inputs/<method>/, where
# `./mvnw verify` replays it from then on.
set -euo pipefail

target=${1:?usage: scripts/fuzz.sh yaml|envoy-grpc|envoy-json|native-grpc|native-json|peer [SECONDS]}
seconds=${2:-600}
case "$target" in
  yaml) module=envoy-adapter class=dev.weir.envoy.config.ConfigLoaderFuzzTest method=compile ;;
  envoy-grpc) module=envoy-adapter class=dev.weir.envoy.service.EnvoyFrontDoorFuzzTest method=shouldRateLimit ;;
  envoy-json) module=envoy-adapter class=dev.weir.envoy.service.EnvoyFrontDoorFuzzTest method=json ;;
  native-grpc) module=gubernator-adapter class=dev.weir.gubernator.NativeFrontDoorFuzzTest method=getRateLimits ;;
  native-json) module=gubernator-adapter class=dev.weir.gubernator.NativeFrontDoorFuzzTest method=gatewayBody ;;
  peer) module=service/core class=dev.weir.core.cluster.peer.PeersServiceFuzzTest method=peerCall ;;
  *) echo "unknown target '$target'" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
classpath=$(mktemp)
trap 'rm -f "$classpath"' EXIT
./mvnw -B -q -pl "$module" -am test-compile dependency:build-classpath \
  -Dmdep.outputFile="$classpath" -Dmdep.includeScope=test
cd "$module"
java -cp "target/test-classes:target/classes:$(cat "$classpath")" com.code_intelligence.jazzer.Jazzer \
  --target_class="$class" --target_method="$method" -max_total_time="$seconds"
