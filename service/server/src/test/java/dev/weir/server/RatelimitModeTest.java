package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import dev.weir.core.config.HostPort;
import dev.weir.core.testkit.Await;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

/**
 * {@code weir.jar ratelimit} in this JVM: envoyproxy/ratelimit's variables pick the ports, the
 * config folder and the stats; its endpoints answer as the reference's do.
 */
class RatelimitModeTest {

  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final String CONFIG =
      """
      domain: demo
      descriptors:
        - key: user
          rate_limit: {unit: minute, requests_per_unit: 1}
      """;

  @TempDir Path dir;
  private final HttpClient http = HttpClient.newHttpClient();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private RatelimitCommand.Running running;
  private ManagedChannel channel;

  @AfterEach
  void stop() {
    if (channel != null) {
      channel.shutdownNow();
    }
    if (running != null) {
      running.close();
    }
  }

  private Map<String, String> env(Map<String, String> extra) {
    Map<String, String> env = new HashMap<>();
    env.put("HOST", "127.0.0.1");
    env.put("PORT", "0");
    env.put("GRPC_HOST", "127.0.0.1");
    env.put("GRPC_PORT", "0");
    env.put("DEBUG_HOST", "127.0.0.1");
    env.put("DEBUG_PORT", "0");
    env.put("RUNTIME_ROOT", dir.toString());
    env.put("RUNTIME_SUBDIRECTORY", "ratelimit");
    env.put("USE_STATSD", "false");
    env.put("WEIR_ENVOY_CONFIG_RELOAD_INTERVAL", "50ms");
    env.putAll(extra);
    return env;
  }

  private void start(Map<String, String> env) {
    int[] status = {0};
    running =
        RatelimitCommand.start(env, new PrintStream(err, true, StandardCharsets.UTF_8), status);
    assertThat(running).as(err.toString(StandardCharsets.UTF_8)).isNotNull();
  }

  private Path configFolder() throws Exception {
    return Files.createDirectories(dir.resolve("ratelimit").resolve("config"));
  }

  private HttpResponse<String> get(int port, String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** A condition on the running service's answers, which may fail to get them. */
  private interface Served {
    boolean holds() throws Exception;
  }

  /** Waits until {@code condition} holds, failing naming {@code what} when it does not in time. */
  private static void awaitServed(Served condition, String what) throws InterruptedException {
    Await.until(
        WAIT,
        () -> {
          try {
            return condition.holds();
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        },
        what);
  }

  private int postJson(String body) throws Exception {
    return http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + running.node().httpPort() + "/json"))
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString())
        .statusCode();
  }

  @Test
  void fileSource_answersOnTheReferenceEndpointsAndSendsTheReferenceStats() throws Exception {
    Files.writeString(configFolder().resolve("config.yaml"), CONFIG);
    try (DatagramSocket statsd = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
      statsd.setSoTimeout(50);
      start(
          env(
              Map.of(
                  "USE_STATSD", "true",
                  "STATSD_HOST", "127.0.0.1",
                  "STATSD_PORT", String.valueOf(statsd.getLocalPort()),
                  "STATS_FLUSH_INTERVAL", "50ms",
                  "REDIS_URL", "redis:6379")));
      String request = "{\"domain\":\"demo\",\"descriptors\":[{\"entries\":[{\"key\":\"user\",\"value\":\"alice\"}]}]}";

      HttpResponse<String> health = get(running.node().httpPort(), "/healthcheck");
      int first = postJson(request);
      int second = postJson(request);
      HttpResponse<String> rlconfig = get(running.debug().port(), "/rlconfig");
      channel =
          ManagedChannelBuilder.forAddress("127.0.0.1", running.node().grpcPort())
              .usePlaintext()
              .build();
      RateLimitResponse third =
          RateLimitServiceGrpc.newBlockingStub(channel)
              .shouldRateLimit(
                  RateLimitRequest.newBuilder()
                      .setDomain("demo")
                      .addDescriptors(
                          RateLimitDescriptor.newBuilder()
                              .addEntries(
                                  RateLimitDescriptor.Entry.newBuilder()
                                      .setKey("user")
                                      .setValue("alice")))
                      .build());
      ServingStatus grpcHealth =
          HealthGrpc.newBlockingStub(channel)
              .check(HealthCheckRequest.newBuilder().setService("ratelimit").build())
              .getStatus();

      assertThat(health.statusCode()).isEqualTo(200);
      assertThat(health.body()).isEqualTo("OK");
      assertThat(first).isEqualTo(200);
      assertThat(second).isEqualTo(429);
      assertThat(third.getOverallCode()).isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
      assertThat(grpcHealth).isEqualTo(ServingStatus.SERVING);
      assertThat(rlconfig.body())
          .isEqualTo(
              "demo.user: unit=MINUTE requests_per_unit=1, shadow_mode: false, quota_mode: false\n");
      Map<String, Long> expected =
          Map.of(
              "ratelimit.service.rate_limit.demo.user.total_hits", 3L,
              "ratelimit.service.rate_limit.demo.user.within_limit", 1L,
              "ratelimit.service.rate_limit.demo.user.over_limit", 2L,
              "ratelimit.service.config_load_success", 1L);
      Map<String, Long> counted = new ConcurrentHashMap<>();
      Await.until(
          WAIT,
          () -> {
            receive(statsd, counted);
            return counted.entrySet().containsAll(expected.entrySet());
          },
          "the reference's stats over UDP: " + expected + ", so far " + counted);
    }
  }

  /** Returns a one-rule config of {@code domain}: one request a minute per {@code user}. */
  private static String config(String domain, int perMinute) {
    return CONFIG.replace("domain: demo", "domain: " + domain)
        .replace("requests_per_unit: 1", "requests_per_unit: " + perMinute);
  }

  private static String jsonRequest(String domain) {
    return "{\"domain\":\""
        + domain
        + "\",\"descriptors\":[{\"entries\":[{\"key\":\"user\",\"value\":\"alice\"}]}]}";
  }

  /**
   * Writes {@code files} as a Kubernetes ConfigMap volume at {@code mount}: a {@code
   * ..<version>} directory, the {@code ..data} link to it, and a link per name through {@code
   * ..data}; a second call swaps {@code ..data} to the new version.
   */
  private static void configMap(Path mount, String version, Map<String, String> files)
      throws Exception {
    Path versionDir = Files.createDirectories(mount.resolve(".." + version));
    for (Map.Entry<String, String> file : files.entrySet()) {
      Files.writeString(versionDir.resolve(file.getKey()), file.getValue());
    }
    Path next = mount.resolve("..data_tmp");
    Files.createSymbolicLink(next, versionDir.getFileName());
    Files.move(
        next, mount.resolve("..data"), java.nio.file.StandardCopyOption.ATOMIC_MOVE,
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    for (String name : files.keySet()) {
      Path link = mount.resolve(name);
      if (!Files.isSymbolicLink(link)) {
        Files.createSymbolicLink(link, Path.of("..data", name));
      }
    }
  }

  @Test
  void configMapWithConfigYamlInTheSubdirectory_loadedAndReloadedAsTheReferenceDoes()
      throws Exception {
    Path mount = Files.createDirectories(dir.resolve("ratelimit"));
    configMap(mount, "v1", Map.of("config.yaml", config("demo", 1)));

    start(env(Map.of()));
    HttpResponse<String> rlconfig = get(running.debug().port(), "/rlconfig");
    int first = postJson(jsonRequest("demo"));
    int second = postJson(jsonRequest("demo"));
    configMap(mount, "v2", Map.of("config.yaml", config("demo", 5)));

    assertThat(rlconfig.body())
        .isEqualTo(
            "demo.user: unit=MINUTE requests_per_unit=1, shadow_mode: false, quota_mode: false\n");
    assertThat(first).isEqualTo(200);
    assertThat(second).isEqualTo(429);
    awaitServed(
        () -> get(running.debug().port(), "/rlconfig").body().contains("requests_per_unit=5"),
        "the swapped ConfigMap version loads");
  }

  @Test
  void configFileBesideTheConfigFolder_loadedAsTheReferenceDoes() throws Exception {
    Files.writeString(configFolder().resolve("a.yaml"), config("a", 1));
    Files.writeString(dir.resolve("ratelimit").resolve("config.b.yaml"), config("b", 1));
    Files.writeString(dir.resolve("ratelimit").resolve("other.yaml"), config("c", 1));

    start(env(Map.of()));

    assertThat(get(running.debug().port(), "/rlconfig").body())
        .contains("a.user:", "b.user:")
        .doesNotContain("c.user:");
    assertThat(postJson(jsonRequest("a"))).isEqualTo(200);
    assertThat(postJson(jsonRequest("a"))).isEqualTo(429);
    assertThat(postJson(jsonRequest("b"))).isEqualTo(200);
    assertThat(postJson(jsonRequest("b"))).isEqualTo(429);
  }

  @Test
  void runtimeWatchRootFalse_onlyTheAppDirectoryLoadsAsInTheReference() throws Exception {
    Files.writeString(configFolder().resolve("a.yaml"), config("a", 1));
    Files.writeString(dir.resolve("ratelimit").resolve("config.b.yaml"), config("b", 1));

    start(env(Map.of("RUNTIME_WATCH_ROOT", "false")));

    assertThat(get(running.debug().port(), "/rlconfig").body())
        .contains("a.user:")
        .doesNotContain("b.user:");
    assertThat(postJson(jsonRequest("b"))).isEqualTo(200);
    assertThat(postJson(jsonRequest("b"))).isEqualTo(200);
  }

  @Test
  void runtimeSubdirectoryMissing_forcedStart_startsAndLoadsTheConfigOnceItAppears()
      throws Exception {
    start(env(Map.of("FORCE_START_WITHOUT_INITIAL_CONFIG", "true")));
    HttpResponse<String> health = get(running.node().httpPort(), "/healthcheck");

    Path subdirectory = Files.createDirectories(dir.resolve("ratelimit"));
    Files.writeString(subdirectory.resolve("config.yaml"), config("demo", 1));

    assertThat(health.statusCode()).isEqualTo(200);
    awaitServed(
        () -> get(running.debug().port(), "/rlconfig").body().contains("demo.user:"),
        "the config loads once the directory appears");
  }

  @Test
  void runtimeSubdirectoryMissing_forcedStart_answersOkToEveryDomainAsTheReferenceDoes()
      throws Exception {
    start(env(Map.of("FORCE_START_WITHOUT_INITIAL_CONFIG", "true")));
    channel =
        ManagedChannelBuilder.forAddress("127.0.0.1", running.node().grpcPort())
            .usePlaintext()
            .build();

    int json = postJson(jsonRequest("demo"));
    RateLimitResponse grpc =
        RateLimitServiceGrpc.newBlockingStub(channel)
            .shouldRateLimit(
                RateLimitRequest.newBuilder()
                    .setDomain("demo")
                    .addDescriptors(
                        RateLimitDescriptor.newBuilder()
                            .addEntries(
                                RateLimitDescriptor.Entry.newBuilder()
                                    .setKey("user")
                                    .setValue("alice")))
                    .build());

    assertThat(json).isEqualTo(200);
    assertThat(grpc.getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);
    assertThat(
            MetricsScrape.until(
                http,
                running.node().httpPort(),
                text -> text.contains("weir_envoy_domain_not_found_total 2.0")))
        .contains("weir_envoy_domain_not_found_total 2.0");
  }

  /** Adds the counter lines of the datagrams waiting on {@code socket} to {@code counted}. */
  static void receive(DatagramSocket socket, Map<String, Long> counted) {
    byte[] buffer = new byte[65_536];
    try {
      while (true) {
        DatagramPacket packet = new DatagramPacket(buffer, buffer.length);
        socket.receive(packet);
        String text = new String(packet.getData(), 0, packet.getLength(), StandardCharsets.UTF_8);
        for (String line : text.split("\n")) {
          int colon = line.lastIndexOf(':');
          if (colon > 0 && line.endsWith("|c")) {
            counted.merge(
                line.substring(0, colon),
                Long.parseLong(line.substring(colon + 1, line.length() - 2)),
                Long::sum);
          }
        }
      }
    } catch (SocketTimeoutException drained) {
      // nothing more waiting
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void withoutConfig_forcedStart_healthyLikeTheReference() throws Exception {
    configFolder();

    start(env(Map.of("FORCE_START_WITHOUT_INITIAL_CONFIG", "true")));

    assertThat(get(running.node().httpPort(), "/healthcheck").statusCode()).isEqualTo(200);
  }

  @Test
  void withoutConfig_refusedNamingTheRuntimeVariablesAndTheReferenceOptIn() throws Exception {
    configFolder();

    String[] lines = refused(env(Map.of()), 2);

    assertThat(lines)
        .singleElement()
        .asString()
        .startsWith(
            dir.resolve("ratelimit")
                + ": no rate limit domain loaded (RUNTIME_ROOT/RUNTIME_SUBDIRECTORY), so every"
                + " request would be allowed: found no file whose path starts with 'config.'. Add"
                + " a descriptor file (a path below it starting with 'config.' once '/' is read as"
                + " '.', e.g. config.yaml; the prefix is RUNTIME_APPDIRECTORY='config' and a '.'")
        .contains("or set FORCE_START_WITHOUT_INITIAL_CONFIG=true to start without one")
        .doesNotContain("WEIR_");
  }

  @Test
  void withoutConfig_appDirectorySet_refusedNamingTheVariablesOfPathPrefixAndLayout()
      throws Exception {
    Files.createDirectories(dir.resolve("ratelimit").resolve("rl"));

    String[] lines = refused(env(Map.of("RUNTIME_APPDIRECTORY", "rl")), 2);

    assertThat(lines)
        .singleElement()
        .asString()
        .startsWith(
            dir.resolve("ratelimit")
                + ": no rate limit domain loaded (RUNTIME_ROOT/RUNTIME_SUBDIRECTORY), so every"
                + " request would be allowed: found no file whose path starts with 'rl.'. Add a"
                + " descriptor file (a path below it starting with 'rl.' once '/' is read as '.',"
                + " e.g. rl.yaml; the prefix is RUNTIME_APPDIRECTORY='rl' and a '.', and"
                + " RUNTIME_WATCH_ROOT=false reads every file in"
                + " RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY instead)")
        .contains("or set FORCE_START_WITHOUT_INITIAL_CONFIG=true to start without one");
  }

  @Test
  void onlyFilesOutsideTheAppDirectoryKeys_refusedNamingThemAsSkipped() throws Exception {
    Files.writeString(
        Files.createDirectories(dir.resolve("ratelimit")).resolve("ratelimit.yaml"), CONFIG);

    String[] lines = refused(env(Map.of()), 2);

    assertThat(lines)
        .singleElement()
        .asString()
        .contains(
            "found no file whose path starts with 'config.', only skipped entries (ratelimit.yaml;"
                + " names starting with '.', and paths not starting with 'config.', are skipped)");
  }

  @Test
  void withoutConfigAndAMisspelledVariable_warningBeforeTheRefusal() throws Exception {
    configFolder();

    String[] lines = refused(env(Map.of("WEIR_CAHCE_SIZE", "10")), 2);

    assertThat(lines[0])
        .isEqualTo(
            "WEIR_CAHCE_SIZE (in the environment) is not a Weir setting and is ignored; did you"
                + " mean WEIR_CACHE_SIZE?");
    assertThat(lines).hasSize(2);
    assertThat(lines[1]).contains(": no rate limit domain loaded (RUNTIME_ROOT/");
  }

  @Test
  void healthyWithAtLeastOneConfigLoaded_unhealthyUntilADomainLoads() throws Exception {
    Path folder = configFolder();
    start(
        env(
            Map.of(
                "FORCE_START_WITHOUT_INITIAL_CONFIG", "true",
                "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "true")));
    HttpResponse<String> before = get(running.node().httpPort(), "/healthcheck");

    Files.writeString(folder.resolve("config.yaml"), CONFIG);

    assertThat(before.statusCode()).isEqualTo(500);
    assertThat(before.body()).isEqualTo("config: no rate limit configuration is loaded");
    awaitServed(
        () -> get(running.node().httpPort(), "/healthcheck").statusCode() == 200,
        "healthy once the config loads");
  }

  @Test
  void portTakenTwice_refusedNamingBothReferenceVariables() {
    int[] status = {0};

    RatelimitCommand.Running none =
        RatelimitCommand.start(
            Map.of("PORT", "7000", "DEBUG_PORT", "7000"),
            new PrintStream(err, true, StandardCharsets.UTF_8),
            status);

    assertThat(none).isNull();
    assertThat(status[0]).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            "DEBUG_PORT=7000 is not valid: the port is taken by PORT=7000; give each listener a"
                + " port of its own"
                + System.lineSeparator());
  }

  /** Runs {@code ratelimit} with {@code env} expecting it refused; returns its stderr lines. */
  private String[] refused(Map<String, String> env, int expectedStatus) {
    int[] status = {0};

    RatelimitCommand.Running none =
        RatelimitCommand.start(env, new PrintStream(err, true, StandardCharsets.UTF_8), status);

    assertThat(none).isNull();
    assertThat(status[0]).isEqualTo(expectedStatus);
    return err.toString(StandardCharsets.UTF_8).split(System.lineSeparator());
  }

  @Test
  void xdsServerWithEmptyHost_localhostAsTheReferenceDialsIt() throws Exception {
    configFolder();

    RatelimitSettings settings =
        RatelimitSettings.from(
            env(Map.of("CONFIG_TYPE", "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL", ":18001")));

    assertThat(settings.envoy().xds().serverAddress()).isEqualTo(new HostPort("localhost", 18001));
  }

  @ParameterizedTest
  @ValueSource(strings = {"xds_server:18001", "xds:0"})
  void xdsServerHostGrpcRefuses_refusedNamingTheReferenceVariable(String url) throws Exception {
    configFolder();

    assertThat(
            refused(env(Map.of("CONFIG_TYPE", "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL", url)), 2))
        .singleElement()
        .asString()
        .startsWith("CONFIG_GRPC_XDS_SERVER_URL='" + url + "' is not valid: expected ")
        .contains("1 to 65535")
        .doesNotContain("WEIR_");
  }

  @Test
  void xdsTlsCaFileMissing_refusedNamingTheReferenceVariableAndTheFile() throws Exception {
    configFolder();
    Map<String, String> env =
        env(
            Map.of(
                "CONFIG_TYPE", "GRPC_XDS_SOTW",
                "CONFIG_GRPC_XDS_SERVER_URL", "127.0.0.1:1",
                "CONFIG_GRPC_XDS_SERVER_USE_TLS", "true",
                "CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "/nonexistent/ca.crt"));

    assertThat(refused(env, 2))
        .containsExactly(
            "the TLS files set by CONFIG_GRPC_XDS_SERVER_TLS_CACERT cannot be used:"
                + " /nonexistent/ca.crt: no such file");
  }

  @Test
  void portOnTheDefaultGrpcPort_refusedNamingPortAndGrpcPort() {
    assertThat(refused(Map.of("PORT", "8081"), 2))
        .containsExactly(
            "PORT=8081 is not valid: the port is taken by GRPC_PORT=8081; give each listener a"
                + " port of its own");
  }

  @Test
  void hostWithASpace_refusedNamingHost() {
    assertThat(refused(Map.of("HOST", "my host"), 2))
        .singleElement()
        .asString()
        .startsWith("HOST='my host' is not valid: expected a host name or IPv4 address")
        .doesNotContain("WEIR_");
  }

  @Test
  void statusAddressOnTheHttpPort_refusedNamingHostAndPort() {
    assertThat(refused(Map.of("WEIR_STATUS_HTTP_ADDRESS", "127.0.0.1:8080"), 2))
        .containsExactly(
            "WEIR_STATUS_HTTP_ADDRESS='127.0.0.1:8080' is not valid: its port is taken by"
                + " HOST/PORT='0.0.0.0:8080'; give the status listener a port of its own");
  }

  @Test
  void debugPortTaken_refusedBeforeTheNodeStarts() throws Exception {
    Files.writeString(configFolder().resolve("config.yaml"), CONFIG);
    try (ServerSocket held = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      assertRefusedBeforeStart(
          env(Map.of("DEBUG_PORT", String.valueOf(held.getLocalPort()))),
          "cannot bind the debug listener at DEBUG_HOST/DEBUG_PORT=127.0.0.1:"
              + held.getLocalPort()
              + ": Address already in use");
    }
  }

  @Test
  void ignoredReferenceVariableAtLogLevelError_noticePrintedOnceBeforeTheError() throws Exception {
    configFolder();
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    Level before = root.getLevel();
    String[] lines;
    try {
      lines =
          refused(
              env(Map.of("LOG_LEVEL", "error", "GRPC_UDS", "/var/run/ratelimit.sock")), 2);
    } finally {
      root.setLevel(before);
    }

    assertThat(lines).hasSize(2);
    assertThat(lines[0])
        .isEqualTo(
            "envoyproxy/ratelimit settings Weir ignores: GRPC_UDS (Weir listens on"
                + " GRPC_HOST:GRPC_PORT, not on a Unix socket)");
    assertThat(lines[1]).contains("no rate limit domain loaded");
  }

  @Test
  void prometheusAddressTaken_refusedBeforeTheNodeStarts() throws Exception {
    Files.writeString(configFolder().resolve("config.yaml"), CONFIG);
    try (ServerSocket held = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      assertRefusedBeforeStart(
          env(
              Map.of(
                  "USE_PROMETHEUS", "true",
                  "PROMETHEUS_ADDR", "127.0.0.1:" + held.getLocalPort())),
          "cannot bind the Prometheus listener at PROMETHEUS_ADDR=127.0.0.1:"
              + held.getLocalPort()
              + ": Address already in use");
    }
  }

  @Test
  void debugPortOnTheStatusPort_refusedBeforeTheNodeStarts() throws Exception {
    Files.writeString(configFolder().resolve("config.yaml"), CONFIG);
    int port;
    try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort();
    }
    assertRefusedBeforeStart(
        env(
            Map.of(
                "DEBUG_PORT", String.valueOf(port),
                "WEIR_STATUS_HTTP_ADDRESS", "127.0.0.1:" + port)),
        2,
        "DEBUG_PORT="
            + port
            + " is not valid: the port is taken by WEIR_STATUS_HTTP_ADDRESS='127.0.0.1:"
            + port
            + "'; give each listener a port of its own");
  }

  @Test
  void prometheusOnTheDefaultPeerPort_refusedBeforeTheNodeStarts() throws Exception {
    Files.writeString(configFolder().resolve("config.yaml"), CONFIG);
    assertRefusedBeforeStart(
        env(
            Map.of(
                "USE_PROMETHEUS", "true",
                "PROMETHEUS_ADDR", ":1052",
                "WEIR_STATIC_PEERS", "127.0.0.1:1052,127.0.0.2:1052",
                "WEIR_PEER_SECRET", "0123456789abcdef0123456789abcdef")),
        2,
        "PROMETHEUS_ADDR=1052 is not valid: the port is taken by WEIR_PEER_ADDRESS='127.0.0.1:1052'"
            + " (not set; the default is the gRPC host at port 1052); give each listener a port of"
            + " its own");
  }

  /**
   * Asserts that {@code env} is refused with exit status 1 and {@code message} alone on stderr
   * before the node starts: the node never asks whether to stop, as it does before it joins.
   */
  private void assertRefusedBeforeStart(Map<String, String> env, String message) {
    assertRefusedBeforeStart(env, 1, message);
  }

  /**
   * Asserts that {@code env} is refused with exit status {@code expectedStatus} and {@code message}
   * alone on stderr before the node starts: the node never asks whether to stop, as it does before
   * it joins.
   */
  private void assertRefusedBeforeStart(
      Map<String, String> env, int expectedStatus, String message) {
    AtomicInteger stopAsked = new AtomicInteger();
    int[] status = {0};

    running =
        RatelimitCommand.start(
            env,
            new PrintStream(err, true, StandardCharsets.UTF_8),
            status,
            () -> stopAsked.incrementAndGet() < 0);

    assertThat(running).isNull();
    assertThat(stopAsked).as("times the node asked whether to stop while starting").hasValue(0);
    assertThat(status[0]).isEqualTo(expectedStatus);
    assertThat(err.toString(StandardCharsets.UTF_8)).isEqualTo(message + System.lineSeparator());
  }

  @Test
  void unknownVariable_startRefused_hintPrintedBeforeTheError() {
    String[] lines =
        refused(
            Map.of(
                "WEIR_STATIC_PEERS", "a:1051,b:1051",
                "WEIR_PEER_SECRT", "0123456789abcdef0123456789abcdef"),
            2);

    assertThat(lines).hasSize(2);
    assertThat(lines[0])
        .isEqualTo(
            "WEIR_PEER_SECRT (in the environment) is not a Weir setting and is ignored; did you"
                + " mean WEIR_PEER_SECRET?");
    assertThat(lines[1]).contains("WEIR_PEER_SECRET");
  }
}
