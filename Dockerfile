# The Weir node image named by manifests/ (weir:0.1.0). Build the jar first, then the image:
#   ./mvnw -B -q -DskipTests package && docker build -t weir:0.1.0 .
FROM eclipse-temurin:17-jre

RUN groupadd --system --gid 10001 weir \
 && useradd --system --uid 10001 --gid weir --no-create-home --shell /usr/sbin/nologin weir

COPY service/server/target/weir.jar /opt/weir/weir.jar

USER 10001:10001
EXPOSE 1050 1051 1052

# Re-resolve DNS after 5 s (WEIR_PEER_DISCOVERY_TYPE=dns); /tmp is the only writable path in the pod.
ENV JAVA_TOOL_OPTIONS="-XX:MaxRAMPercentage=75 -Dsun.net.inetaddr.ttl=5 -Djava.io.tmpdir=/tmp"
ENTRYPOINT ["java", "-jar", "/opt/weir/weir.jar"]
