# The Weir node image named by manifests/ (weir:0.1.0), built from the sources:
#   docker build -t weir:0.1.0 .
# `docker compose up --build` (envoy-config/) builds it on a fresh clone. The image runs `weir.jar` (the `serve`
# subcommand unless told otherwise) and `/bin/ratelimit`, the drop-in for envoyproxy/ratelimit that Envoy Gateway
# runs as the container command (docs/migrating-from-ratelimit.md).

FROM eclipse-temurin:17-jdk AS build
WORKDIR /src
COPY .mvn/ .mvn/
COPY mvnw pom.xml ./
COPY . .
RUN ./mvnw -B -q -DskipTests -pl service/server -am package

FROM eclipse-temurin:17-jre

RUN groupadd --system --gid 10001 weir \
 && useradd --system --uid 10001 --gid weir --no-create-home --shell /usr/sbin/nologin weir

COPY --from=build /src/service/server/target/weir.jar /opt/weir/weir.jar
RUN printf '#!/bin/sh\nexec java -jar /opt/weir/weir.jar ratelimit "$@"\n' > /bin/ratelimit \
 && chmod 0755 /bin/ratelimit

USER 10001:10001
# serve: 1050 HTTP, 1051 gRPC, 1052 peers; ratelimit: 8080 HTTP, 8081 gRPC, 6070 debug.
EXPOSE 1050 1051 1052 8080 8081 6070

# Listen on every interface inside the container (the ratelimit subcommand's HOST/GRPC_HOST default to 0.0.0.0
# already). Re-resolve DNS after 5 s (WEIR_PEER_DISCOVERY_TYPE=dns); /tmp is the only writable path in the pod.
ENV WEIR_GRPC_ADDRESS=0.0.0.0:1051 \
    WEIR_HTTP_ADDRESS=0.0.0.0:1050 \
    JAVA_TOOL_OPTIONS="-XX:MaxRAMPercentage=75 -Dsun.net.inetaddr.ttl=5 -Djava.io.tmpdir=/tmp"
ENTRYPOINT ["java", "-jar", "/opt/weir/weir.jar"]
