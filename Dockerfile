# The Weir node image, built from source: `docker build -t weir:0.1.0 .` at the repository root.
# What the image sets and how to run it: README.md, "Docker image". The image runs `weir.jar` (the
# `serve` subcommand unless told otherwise) and `/bin/ratelimit`, the drop-in for envoyproxy/ratelimit
# that Envoy Gateway runs as the container command (docs/migrating-from-ratelimit.md).

FROM eclipse-temurin:17-jdk AS build
WORKDIR /build

# The Maven Wrapper and every module's POM first, so the dependency layer is rebuilt only when one
# of them changes, not on every source edit.
COPY mvnw ./
COPY .mvn/ .mvn/
COPY pom.xml ./
COPY proto/pom.xml proto/
COPY service/ring/pom.xml service/ring/
COPY service/client/pom.xml service/client/
COPY service/core/pom.xml service/core/
COPY service/http/pom.xml service/http/
COPY service/tls/pom.xml service/tls/
COPY service/metrics-micrometer/pom.xml service/metrics-micrometer/
COPY service/discovery-etcd/pom.xml service/discovery-etcd/
COPY service/discovery-kubernetes/pom.xml service/discovery-kubernetes/
COPY gubernator-adapter/pom.xml gubernator-adapter/
COPY envoy-adapter/pom.xml envoy-adapter/
COPY service/server/pom.xml service/server/
COPY e2e/pom.xml e2e/
COPY manifests/helm/pom.xml manifests/helm/
RUN ./mvnw -B -ntp -pl service/server -am dependency:go-offline

# The sources of the modules weir.jar is made of (-am: those service/server depends on).
COPY proto/src/ proto/src/
COPY service/ring/src/ service/ring/src/
COPY service/core/src/ service/core/src/
COPY service/http/src/ service/http/src/
COPY service/tls/src/ service/tls/src/
COPY service/metrics-micrometer/src/ service/metrics-micrometer/src/
COPY service/discovery-etcd/src/ service/discovery-etcd/src/
COPY service/discovery-kubernetes/src/ service/discovery-kubernetes/src/
COPY gubernator-adapter/src/ gubernator-adapter/src/
COPY envoy-adapter/src/ envoy-adapter/src/
COPY service/server/src/ service/server/src/
RUN ./mvnw -B -ntp -pl service/server -am -DskipTests package

FROM eclipse-temurin:17-jre

RUN groupadd --system --gid 10001 weir \
 && useradd --system --uid 10001 --gid weir --no-create-home --shell /usr/sbin/nologin weir

COPY --from=build /build/service/server/target/weir.jar /opt/weir/weir.jar
RUN printf '#!/bin/sh\nexec java -jar /opt/weir/weir.jar ratelimit "$@"\n' > /bin/ratelimit \
 && chmod 0755 /bin/ratelimit

USER 10001:10001
# serve: 1050 HTTP, 1051 gRPC, 1052 peers; ratelimit: 8080 HTTP, 8081 gRPC, 6070 debug.
EXPOSE 1050 1051 1052 8080 8081 6070

# Listen on every interface (the jar's defaults are localhost); the peer listener takes the gRPC
# host, port 1052. The ratelimit subcommand's HOST and GRPC_HOST default to 0.0.0.0 already.
ENV WEIR_GRPC_ADDRESS=0.0.0.0:1051 \
    WEIR_HTTP_ADDRESS=0.0.0.0:1050
# Re-resolve DNS after 5 s (WEIR_PEER_DISCOVERY_TYPE=dns); /tmp is the only writable path in the pod.
ENV JAVA_TOOL_OPTIONS="-XX:MaxRAMPercentage=75 -Dsun.net.inetaddr.ttl=5 -Djava.io.tmpdir=/tmp"
ENTRYPOINT ["java", "-jar", "/opt/weir/weir.jar"]
