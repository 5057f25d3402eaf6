package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.envoy.EnvoySettings;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class EnvoyWiringTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 2, name: per-ip}
        - key: client
          rate_limit: {unit: minute, requests_per_unit: 600}
      """;

  @TempDir Path dir;
  private final FakeClock clock = new FakeClock();
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private WeirNode node;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (node != null) {
      node.close();
    }
  }

  private WeirNode startNode(Path config) throws Exception {
    return startNode(config, Map.of());
  }

  private WeirNode startNode(Path config, Map<String, String> env) throws Exception {
    WeirConfig weir = TestConfigs.loopback();
    Map<String, String> all = new HashMap<>(env);
    all.put("WEIR_ENVOY_CONFIG", config.toString());
    EnvoySettings envoy = EnvoySettings.fromEnvironment(all);
    node =
        WeirNode.builder(weir)
            .envoy(envoy)
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
    return node;
  }

  private static RateLimitRequest request(String key, String value) {
    return RateLimitRequest.newBuilder()
        .setDomain("shop")
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value)))
        .build();
  }

  private int run(String... args) throws Exception {
    return run(Map.of(), args);
  }

  private int run(Map<String, String> env, String... args) throws Exception {
    return Main.run(
        List.of(args),
        env,
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  @Test
  void shouldRateLimit_onTheGrpcPort_countsThroughTheNodesService() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    startNode(dir);
    clock.advance(Duration.ofSeconds(15));
    RateLimitServiceGrpc.RateLimitServiceBlockingStub stub =
        RateLimitServiceGrpc.newBlockingStub(channel);

    RateLimitResponse first = stub.shouldRateLimit(request("remote_address", "10.0.0.1"));
    stub.shouldRateLimit(request("remote_address", "10.0.0.1"));
    RateLimitResponse third = stub.shouldRateLimit(request("remote_address", "10.0.0.1"));

    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(first.getStatuses(0).getLimitRemaining()).isEqualTo(1);
    assertThat(first.getStatuses(0).getDurationUntilReset().getSeconds()).isEqualTo(45);
    assertThat(third.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void rlqs_onTheGrpcPort_assignsAQuotaCountsTheReportAndEndsTheStreamOnClose() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    startNode(dir);
    RlqsStream stream = new RlqsStream(channel);
    BucketId bucket = BucketId.newBuilder().putBucket("client", "c1").build();

    RateLimitQuotaResponse first = stream.reportOneAllowed("shop", bucket);

    assertThat(first.getBucketAction(0).getBucketId()).isEqualTo(bucket);
    assertThat(
            first
                .getBucketAction(0)
                .getQuotaAssignmentAction()
                .getRateLimitStrategy()
                .hasTokenBucket())
        .isTrue();
    String metrics =
        MetricsScrape.until(
            HttpClient.newHttpClient(),
            node.httpPort(),
            text -> text.contains("weir_rlqs_usage_reports_total 1.0"));
    assertThat(metrics).contains("weir_rlqs_usage_reports_total 1.0", "weir_rlqs_streams 1.0");

    node.close();

    Await.until(Duration.ofSeconds(10), () -> stream.ended.get() != null, "the stream to end");
    assertThat(io.grpc.Status.fromThrowable(stream.ended.get()).getCode())
        .isEqualTo(io.grpc.Status.Code.UNAVAILABLE);
  }

  @Test
  void envoyDomains_adapterOn_theLoadedDomains() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    Files.writeString(dir.resolve("api.yaml"), YAML.replace("domain: shop", "domain: api"));

    startNode(dir);

    assertThat(node.envoyDomains()).hasValue(List.of("api", "shop"));
  }

  @Test
  void shouldRateLimit_unmatchedDescriptor_okOverGrpcAndJson() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    startNode(dir);

    RateLimitResponse grpc =
        RateLimitServiceGrpc.newBlockingStub(channel).shouldRateLimit(request("path", "/"));
    HttpResponse<String> json =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/json"))
                    .POST(
                        HttpRequest.BodyPublishers.ofString(
                            "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":[{\"key\":\"path\","
                                + "\"value\":\"/\"}]}]}"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());

    assertThat(grpc.getOverallCode()).isEqualTo(Code.OK);
    assertThat(grpc.getStatuses(0).hasCurrentLimit()).isFalse();
    assertThat(json.statusCode()).isEqualTo(200);
    assertThat(json.body()).isEqualTo("{\"overallCode\":\"OK\",\"statuses\":[{\"code\":\"OK\"}]}");
  }

  @Test
  void serve_invalidDescriptorConfig_exit2WithTheLoadError() throws Exception {
    Path file = dir.resolve("bad.yaml");
    Files.writeString(file, "domain: shop\nbogus: 1\n");

    int status =
        run(
            Map.of(
                "WEIR_GRPC_ADDRESS", "127.0.0.1:0",
                "WEIR_HTTP_ADDRESS", "127.0.0.1:0",
                "WEIR_ENVOY_CONFIG", file.toString()),
            "serve");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            file
                + ": config error, unknown key 'bogus': in the top-level map at line 2; allowed keys"
                + " are domain, descriptors"
                + System.lineSeparator());
  }

  @Test
  void validateConfig_validDirectory_exit0() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);

    assertThat(run("validate-config", dir.toString())).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8))
        .isEqualTo("OK " + dir + System.lineSeparator());
  }

  @Test
  void validateConfig_invalidFiles_exit1PrintingEveryError() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "descriptors: []\n");
    Files.writeString(dir.resolve("b.yaml"), "domain: shop\ndescriptors:\n  - key: k\n");
    Files.writeString(dir.resolve("c.yaml"), "domain: shop\n");

    int status = run("validate-config", dir.toString());

    assertThat(status).isEqualTo(1);
    assertThat(err.toString(StandardCharsets.UTF_8).lines())
        .containsExactly(
            dir.resolve("a.yaml") + ": config file cannot have empty domain",
            dir.resolve("c.yaml")
                + ": duplicate domain 'shop' in config file: "
                + dir.resolve("b.yaml")
                + " declares it too; allowed is one file per domain, or several whose top-level"
                + " descriptors are merged, with WEIR_ENVOY_MERGE_DOMAIN_CONFIG=true");
  }

  @Test
  void validateConfig_withoutPath_usageExit2() throws Exception {
    assertThat(run("validate-config")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).startsWith("usage:");
  }

  @ParameterizedTest
  @ValueSource(strings = {"--strict", "--strictx", "-s"})
  void validateConfig_optionWithoutPath_usageExit2(String option) throws Exception {
    assertThat(run("validate-config", option)).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(ValidateConfigCommand.USAGE + System.lineSeparator());
  }

  @Test
  void validateConfig_unknownOptionBeforeThePath_usageExit2() throws Exception {
    assertThat(run("validate-config", "--strictx", dir.toString())).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(ValidateConfigCommand.USAGE + System.lineSeparator());
  }

  @Test
  void serve_directoryWithoutDomain_exit2NamingThePathWhatItFoundAndTheOptIn() throws Exception {
    Files.createDirectories(dir.resolve("..2026_11_30_10_00_00.1"));
    Files.createSymbolicLink(dir.resolve("..data"), Path.of("..2026_11_30_10_00_00.1"));

    int status =
        run(
            Map.of(
                "WEIR_GRPC_ADDRESS", "127.0.0.1:0",
                "WEIR_HTTP_ADDRESS", "127.0.0.1:0",
                "WEIR_ENVOY_CONFIG", dir.toString()),
            "serve");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            dir
                + ": no rate limit domain loaded (WEIR_ENVOY_CONFIG), so every request would be"
                + " allowed: found no file to load, only skipped entries (..2026_11_30_10_00_00.1,"
                + " ..data; names starting with '.' are skipped). Add a"
                + " descriptor file (any name not starting with '.'), or set"
                + " WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true to start without one (the"
                + " node then reports not ready until a config with a domain loads)"
                + System.lineSeparator());
  }

  @Test
  void node_forcedStartWithoutDomain_notReadyUntilAReloadBringsOne() throws Exception {
    startNode(
        dir,
        Map.of(
            "WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG", "true",
            "WEIR_ENVOY_CONFIG_RELOAD_INTERVAL", "10ms"));
    HealthGrpc.HealthBlockingStub grpcHealth = HealthGrpc.newBlockingStub(channel);

    HttpResponse<String> before = healthCheck();
    ServingStatus grpcBefore =
        grpcHealth.check(HealthCheckRequest.getDefaultInstance()).getStatus();
    RateLimitResponse answer =
        RateLimitServiceGrpc.newBlockingStub(channel)
            .shouldRateLimit(request("remote_address", "10.0.0.1"));
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    Await.until(
        Duration.ofSeconds(10), () -> node.health().ready(), "healthy after reload");
    node.refreshHealth();

    assertThat(before.statusCode()).isEqualTo(503);
    assertThat(before.body()).contains("no rate limit configuration is loaded");
    assertThat(grpcBefore).isEqualTo(ServingStatus.NOT_SERVING);
    assertThat(answer.getOverallCode()).isEqualTo(Code.OK);
    assertThat(healthCheck().statusCode()).isEqualTo(200);
    assertThat(grpcHealth.check(HealthCheckRequest.getDefaultInstance()).getStatus())
        .isEqualTo(ServingStatus.SERVING);
  }

  private HttpResponse<String> healthCheck() throws Exception {
    return HttpClient.newHttpClient()
        .send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + node.httpPort() + "/v1/HealthCheck"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void validateConfig_recursiveAlias_exit1WithOneLineAndNoStackTrace() throws Exception {
    Path file = dir.resolve("a.yaml");
    Files.writeString(file, "domain: a\ndescriptors: &d [{key: a, descriptors: *d}]\n");

    int status = run("validate-config", file.toString());

    assertThat(status).isEqualTo(1);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            file
                + ": error loading config file: recursive alias: the list at line 2 contains itself"
                + System.lineSeparator());
  }

  @Test
  void validateConfig_aliasBomb_exit1Quickly() throws Exception {
    StringBuilder bomb =
        new StringBuilder("domain: bomb\ndescriptors:\n  - key: k\n    metadata:\n");
    bomb.append("      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i <= 24; i++) {
      bomb.append("      l" + i + ": &l" + i + " [*l" + (i - 1) + ", *l" + (i - 1) + "]\n");
    }
    Path file = dir.resolve("bomb.yaml");
    Files.writeString(file, bomb);

    int status =
        assertTimeoutPreemptively(
            Duration.ofSeconds(10), () -> run("validate-config", file.toString()));

    assertThat(status).isEqualTo(1);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            file
                + ": error loading config file: aliases expand the document by more than 100000"
                + " nodes, the limit per file"
                + System.lineSeparator());
  }

  @Test
  void explain_withNode_printsTheMatchAndTheCountersRemainingOnTheNode() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    startNode(dir);
    RateLimitServiceGrpc.newBlockingStub(channel)
        .shouldRateLimit(request("remote_address", "10.0.0.1"));

    clock.advance(Duration.ofSeconds(20));

    int status =
        new ExplainCommand(clock)
            .run(
                List.of(
                    "--node",
                    "127.0.0.1:" + node.grpcPort(),
                    dir.toString(),
                    "shop",
                    "remote_address=10.0.0.1"),
                Map.of(),
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));

    assertThat(status).isEqualTo(0);
    assertThat(out.toString(StandardCharsets.UTF_8))
        .contains("  matched: remote_address (any value) (" + dir.resolve("shop.yaml") + ":3)")
        .contains("  policy 1: 2 per minute, fixed_window, name \"per-ip\"")
        .contains(
            "    on 127.0.0.1:"
                + node.grpcPort()
                + ": 1 of 2 remaining, UNDER_LIMIT, resets in 40 s");
  }

  @Test
  void explain_withNode_calendarRuleInAnotherZone_checksTheRulesWindowWithoutResettingIt()
      throws Exception {
    ZoneOffset nodeZone =
        ZoneId.systemDefault().getRules().getOffset(Instant.ofEpochMilli(clock.wallMillis()));
    String ruleZone = nodeZone.equals(ZoneOffset.ofHours(14)) ? "-12:00" : "+14:00";
    Files.writeString(
        dir.resolve("shop.yaml"),
        """
        domain: shop
        descriptors:
          - key: account
            rate_limit: {unit: day, requests_per_unit: 5, calendar: true, time_zone: "%s"}
        """
            .formatted(ruleZone));
    startNode(dir);
    RateLimitServiceGrpc.RateLimitServiceBlockingStub stub =
        RateLimitServiceGrpc.newBlockingStub(channel);
    stub.shouldRateLimit(request("account", "a1"));
    stub.shouldRateLimit(request("account", "a1"));

    int status =
        run(
            "explain",
            "--node",
            "127.0.0.1:" + node.grpcPort(),
            dir.toString(),
            "shop",
            "account=a1");
    RateLimitResponse next = stub.shouldRateLimit(request("account", "a1"));

    assertThat(status).isEqualTo(0);
    assertThat(out.toString(StandardCharsets.UTF_8))
        .contains("    on 127.0.0.1:" + node.grpcPort() + ": 3 of 5 remaining, UNDER_LIMIT");
    assertThat(next.getStatuses(0).getLimitRemaining()).isEqualTo(2);
  }

  private Map<String, String> xdsServeEnv(Map<String, String> extra) {
    Map<String, String> env = new HashMap<>();
    env.put("WEIR_GRPC_ADDRESS", "127.0.0.1:0");
    env.put("WEIR_HTTP_ADDRESS", "127.0.0.1:0");
    env.put("WEIR_PEER_ADDRESS", "127.0.0.1:0");
    env.put("WEIR_WARMUP", "0s");
    env.put("WEIR_ENVOY_CONFIG_SOURCE", "xds");
    env.putAll(extra);
    return env;
  }

  @Test
  void xdsServerWithEmptyHost_localhost() {
    EnvoySettings settings =
        EnvoySettings.fromEnvironment(xdsServeEnv(Map.of("WEIR_ENVOY_XDS_SERVER_URL", ":18000")));

    assertThat(settings.xds().serverAddress()).isEqualTo(new HostPort("localhost", 18000));
  }

  @ParameterizedTest
  @ValueSource(strings = {"xds_server:18000", "xds:0"})
  void serve_xdsServerHostGrpcRefuses_exit2WithOneLineNamingTheVariable(String url)
      throws Exception {
    Map<String, String> env = xdsServeEnv(Map.of("WEIR_ENVOY_XDS_SERVER_URL", url));

    int status = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> run(env, "serve"));

    assertThat(status).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .startsWith("WEIR_ENVOY_XDS_SERVER_URL='" + url + "' is not valid: expected ")
        .hasLineCount(1);
  }

  @Test
  void serve_xdsTlsCaFileMissing_exit2NamingTheVariableAndTheFile() throws Exception {
    Map<String, String> env =
        xdsServeEnv(
            Map.of(
                "WEIR_ENVOY_XDS_SERVER_URL", "127.0.0.1:1",
                "WEIR_ENVOY_XDS_SERVER_USE_TLS", "true",
                "WEIR_ENVOY_XDS_SERVER_TLS_CACERT", "/nonexistent/ca.crt"));

    int status = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> run(env, "serve"));

    assertThat(status).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            "the TLS files set by WEIR_ENVOY_XDS_SERVER_TLS_CACERT cannot be used:"
                + " /nonexistent/ca.crt: no such file"
                + System.lineSeparator());
  }

  @Test
  void explain_nodeWithEmptyHost_asksLocalhost() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    startNode(dir);

    int status =
        run("explain", "--node", ":" + node.grpcPort(), dir.toString(), "shop", "remote_address=a");

    assertThat(status).isEqualTo(0);
    assertThat(out.toString(StandardCharsets.UTF_8))
        .contains("    on :" + node.grpcPort() + ": 2 of 2 remaining, UNDER_LIMIT");
  }

  @Test
  void explain_nodeHostGrpcRefusesAndConfigInvalid_usageExit2NamingTheFlag() throws Exception {
    Files.writeString(dir.resolve("bad.yaml"), "domain: shop\ndescriptors:\n  - key: ''\n");

    int status = run("explain", "--node", "weir_1:1051", dir.toString(), "shop", "a=b");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .startsWith("--node must be HOST:PORT, got 'weir_1:1051': ")
        .hasLineCount(1);
  }

  @ParameterizedTest
  @ValueSource(strings = {"weir_1:1051", "localhost:0"})
  void explain_nodeHostGrpcRefuses_usageExit2NamingTheFlagAndValue(String target)
      throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);

    int status = run("explain", "--node", target, dir.toString(), "shop", "remote_address=a");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .startsWith("--node must be HOST:PORT, got '" + target + "': ")
        .hasLineCount(1);
  }

  @Test
  void explain_invalidConfig_exit1WithTheLoadErrors() throws Exception {
    Files.writeString(dir.resolve("bad.yaml"), "domain: shop\ndescriptors:\n  - key: ''\n");

    int status = run("explain", dir.toString(), "shop", "a=b");

    assertThat(status).isEqualTo(1);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("descriptor has empty key");
  }

  @Test
  void explain_descriptorWithoutEquals_usageExit2() throws Exception {
    int status = run("explain", dir.toString(), "shop", "remote_address");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("descriptor 'remote_address': every entry must be key=value")
        .contains("usage: java -jar weir.jar explain");
  }

  @Test
  void explain_limitBeforeADescriptor_explainsItsLimitOverrideLikeTheDecision() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);

    int status =
        run(
            "explain",
            dir.toString(),
            "shop",
            "--limit",
            "1000/HOUR",
            "remote_address=10.0.0.1",
            "remote_address=10.0.0.2");

    assertThat(status).isEqualTo(0);
    assertThat(out.toString(StandardCharsets.UTF_8).lines())
        .containsExactly(
            "descriptor 1: remote_address=10.0.0.1",
            "  limit override: 1000 per hour, from the descriptor's limit; rules are not matched",
            "  counter: unique_key \"14:remote_address=8:10.0.0.1\"",
            "  policy 1: 1000 per hour, fixed_window, limit override, counter name"
                + " \"envoy-override:4:shop/HOUR\"",
            "descriptor 2: remote_address=10.0.0.2",
            "  matched: remote_address (any value) (" + dir.resolve("shop.yaml") + ":3)",
            "  counter: unique_key \"14:remote_address=8:10.0.0.2\"",
            "  policy 1: 2 per minute, fixed_window, name \"per-ip\", counter name"
                + " \"envoy:4:shop/14:remote_address\"");
  }

  @ParameterizedTest
  @ValueSource(strings = {"1000/week", "1000", "-1/hour", "4294967296/hour", "x/hour"})
  void explain_invalidLimit_usageExit2NamingTheValueAndWhatIsAllowed(String limit)
      throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);

    int status = run("explain", dir.toString(), "shop", "--limit", limit, "remote_address=a");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains(
            "--limit is '"
                + limit
                + "'; it must be N/UNIT, N a whole number from 0 to 4294967295 and"
                + " UNIT one of second, minute, hour, day, month, year")
        .contains("usage: java -jar weir.jar explain");
  }

  @Test
  void explain_limitWithoutADescriptorAfterIt_usageExit2() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);

    int status = run("explain", dir.toString(), "shop", "remote_address=a", "--limit", "5/second");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("--limit 5/second must be followed by the DESCRIPTOR it applies to");
  }

  @Test
  void explainParseDescriptor_escapedCommaAndEquals_keptInTheValue() {
    assertThat(ExplainCommand.parseDescriptor("path=/a\\,b\\=c,user=x"))
        .containsExactly(
            new dev.weir.envoy.match.Entry("path", "/a,b=c"),
            new dev.weir.envoy.match.Entry("user", "x"));
  }
}
