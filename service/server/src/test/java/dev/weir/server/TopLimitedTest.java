package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.config.EnvReader;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FreePorts;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.envoy.EnvoySettings;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.V1Grpc;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /v1/TopLimited} of real nodes on loopback, fed by their Envoy and native front doors:
 * the keys answered over the limit, highest first, per node and merged over the cluster; its
 * settings (off, hashed values), its query errors and the bounded per-rule metric.
 */
class TopLimitedTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 1, name: per-ip}
      """;

  @TempDir Path dir;
  private final FakeClock clock = new FakeClock();
  private final List<AutoCloseable> resources = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stop() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  private WeirNode node(TopLimitedSettings settings) throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    WeirNode node =
        WeirNode.builder(TestConfigs.loopback())
            .envoy(EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_CONFIG", dir.toString())))
            .topLimited(settings)
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
    resources.add(node);
    return node;
  }

  private WeirNode member(int grpcPort, int peerPort, List<String> peers) throws Exception {
    WeirNode node =
        memberBuilder(grpcPort, peerPort, peers)
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
    resources.add(node);
    return node;
  }

  /** A member of {@code peers} on the system clock (which finds a silent peer down). */
  private static WeirNode.Builder memberBuilder(int grpcPort, int peerPort, List<String> peers) {
    return StaticMembers.builder(grpcPort, peerPort, peers, "top-limited-test-peer-secret");
  }


  private ManagedChannel channel(WeirNode node) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return channel;
  }

  private static void envoyCall(ManagedChannel channel, String address) {
    RateLimitServiceGrpc.newBlockingStub(channel)
        .shouldRateLimit(
            RateLimitRequest.newBuilder()
                .setDomain("shop")
                .addDescriptors(
                    RateLimitDescriptor.newBuilder()
                        .addEntries(
                            RateLimitDescriptor.Entry.newBuilder()
                                .setKey("remote_address")
                                .setValue(address)))
                .build());
  }

  private static void nativeCall(ManagedChannel channel, String key, long hits) {
    nativeCall(channel, "login", key, hits);
  }

  private static void nativeCall(ManagedChannel channel, String name, String key, long hits) {
    V1Grpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .getRateLimits(
            GetRateLimitsReq.newBuilder()
                .addRequests(
                    RateLimitReq.newBuilder()
                        .setName(name)
                        .setUniqueKey(key)
                        .setHits(hits)
                        .setLimit(1)
                        .setDuration(60_000))
                .build());
  }

  private HttpResponse<String> get(WeirNode node, String pathAndQuery) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + pathAndQuery))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private Struct topLimited(WeirNode node, String query) throws Exception {
    HttpResponse<String> response = get(node, "/v1/TopLimited" + query);
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    Struct.Builder out = Struct.newBuilder();
    JsonFormat.parser().merge(response.body(), out);
    return out.build();
  }

  private static List<Struct> keys(Struct answer) {
    return answer.getFieldsOrThrow("keys").getListValue().getValuesList().stream()
        .map(Value::getStructValue)
        .toList();
  }

  private static String text(Struct s, String field) {
    return s.getFieldsOrThrow(field).getStringValue();
  }

  private static long number(Struct s, String field) {
    return (long) s.getFieldsOrThrow(field).getNumberValue();
  }

  private static String keyValue(Struct entry, int i) {
    return text(
        entry.getFieldsOrThrow("key").getListValue().getValues(i).getStructValue(), "value");
  }

  @Test
  void node_listsEnvoyAndNativeKeysOverTheLimit_highestFirst() throws Exception {
    WeirNode node = node(TopLimitedSettings.DEFAULTS);
    ManagedChannel channel = channel(node);
    for (int i = 0; i < 4; i++) {
      envoyCall(channel, "10.0.0.1");
    }
    envoyCall(channel, "10.0.0.2");
    envoyCall(channel, "10.0.0.2");
    nativeCall(channel, "alice", 1);
    nativeCall(channel, "alice", 5);

    Struct answer = topLimited(node, "");
    List<Struct> keys = keys(answer);

    assertThat(text(answer, "scope")).isEqualTo("node");
    assertThat(number(answer, "window_seconds")).isEqualTo(300);
    assertThat(keys).hasSize(3);
    Struct first = keys.get(0);
    assertThat(text(first, "source")).isEqualTo("envoy");
    assertThat(text(first, "domain")).isEqualTo("shop");
    assertThat(text(first, "rule")).isEqualTo("per-ip");
    assertThat(
            text(first.getFieldsOrThrow("key").getListValue().getValues(0).getStructValue(), "key"))
        .isEqualTo("remote_address");
    assertThat(keyValue(first, 0)).isEqualTo("10.0.0.1");
    assertThat(number(first, "over_limit")).isEqualTo(3);
    assertThat(number(first, "hits")).isEqualTo(3);
    assertThat(number(first, "error")).isZero();
    Struct nativeKey =
        keys.stream().filter(k -> text(k, "source").equals("native")).findFirst().orElseThrow();
    assertThat(text(nativeKey, "rule")).isEqualTo("login");
    assertThat(text(nativeKey, "domain")).isEmpty();
    assertThat(keyValue(nativeKey, 0)).isEqualTo("alice");
    assertThat(number(nativeKey, "over_limit")).isEqualTo(1);
    assertThat(number(nativeKey, "hits")).isEqualTo(5);
    assertThat(number(answer, "over_limit_total")).isEqualTo(5);
    assertThat(keys(topLimited(node, "?limit=1"))).hasSize(1);
  }

  @Test
  void node_hitsSummingPastTheLongRange_shownAsTheLargestLong() throws Exception {
    WeirNode node = node(TopLimitedSettings.DEFAULTS);
    ManagedChannel channel = channel(node);
    nativeCall(channel, "max", Long.MAX_VALUE);
    nativeCall(channel, "max", Long.MAX_VALUE);

    String body = get(node, "/v1/TopLimited").body();

    assertThat(body).contains("\"over_limit\":2,\"hits\":9223372036854775807,");
  }

  @Test
  void node_keysOlderThanTheWindow_leaveIt() throws Exception {
    WeirNode node = node(TopLimitedSettings.DEFAULTS);
    ManagedChannel channel = channel(node);
    envoyCall(channel, "10.0.0.1");
    envoyCall(channel, "10.0.0.1");

    assertThat(keys(topLimited(node, ""))).hasSize(1);
    clock.advance(Duration.ofMinutes(5));
    assertThat(keys(topLimited(node, ""))).isEmpty();
  }

  @Test
  void hashKeys_showsValuesHashed() throws Exception {
    WeirNode node = node(new TopLimitedSettings(true, 100, true, 100));
    ManagedChannel channel = channel(node);
    envoyCall(channel, "10.0.0.1");
    envoyCall(channel, "10.0.0.1");

    Struct answer = topLimited(node, "");

    assertThat(keyValue(keys(answer).get(0), 0))
        .isEqualTo(TopLimitedRoute.hashed("10.0.0.1"))
        .startsWith("sha256:")
        .hasSize("sha256:".length() + 16);
    assertThat(answer.getFieldsOrThrow("hashed").getBoolValue()).isTrue();
  }

  @Test
  void off_answers404SayingHowToTurnItOn() throws Exception {
    WeirNode node = node(new TopLimitedSettings(false, 100, false, 100));

    HttpResponse<String> response = get(node, "/v1/TopLimited");

    assertThat(response.statusCode()).isEqualTo(404);
    assertThat(response.body()).contains("WEIR_TOP_LIMITED=true");
  }

  @Test
  void badQueryParameters_answer400NamingTheParameterTheValueAndWhatIsAllowed() throws Exception {
    WeirNode node = node(TopLimitedSettings.DEFAULTS);

    HttpResponse<String> scope = get(node, "/v1/TopLimited?scope=world");
    HttpResponse<String> limit = get(node, "/v1/TopLimited?limit=0");
    HttpResponse<String> text = get(node, "/v1/TopLimited?limit=ten");
    HttpResponse<String> unknown = get(node, "/v1/TopLimited?top=5");
    HttpResponse<String> twice = get(node, "/v1/TopLimited?limit=1&limit=2");

    assertThat(List.of(scope, limit, text, unknown, twice))
        .allSatisfy(r -> assertThat(r.statusCode()).isEqualTo(400));
    assertThat(scope.body())
        .contains("\"code\":3")
        .contains("query parameter 'scope' is 'world'; allowed: node, cluster");
    assertThat(limit.body())
        .contains("query parameter 'limit' is '0'; allowed: a whole number from 1 to 1000");
    assertThat(text.body()).contains("query parameter 'limit' is 'ten'");
    assertThat(unknown.body()).contains("unknown query parameter 'top'; allowed: limit, scope");
    assertThat(twice.body()).contains("query parameter 'limit' is given 2 times");
  }

  @Test
  void metric_countsPerRule_rulesBeyondTheCapUnderOther() throws Exception {
    WeirNode node = node(new TopLimitedSettings(true, 100, false, 1));
    ManagedChannel channel = channel(node);
    envoyCall(channel, "10.0.0.1");
    envoyCall(channel, "10.0.0.1");
    envoyCall(channel, "10.0.0.1");
    nativeCall(channel, "login", "a", 2);
    nativeCall(channel, "signup", "b", 2);
    nativeCall(channel, "signup", "c", 2);

    String metrics = get(node, "/metrics").body();

    assertThat(metrics)
        .contains(
            "weir_over_limit_decisions_total{domain=\"shop\",rule=\"per-ip\",source=\"envoy\"} 2.0")
        .contains(
            "weir_over_limit_decisions_total{domain=\"\",rule=\"login\",source=\"native\"} 1.0")
        .contains(
            "weir_over_limit_decisions_total{domain=\"\",rule=\"_other\",source=\"native\"} 2.0")
        .doesNotContain("rule=\"signup\"")
        .doesNotContain("10.0.0.1");
  }

  @Test
  void metric_nativeNamesTakingTheCapFirst_leaveEnvoyRulesTheirOwnSeries() throws Exception {
    WeirNode node = node(new TopLimitedSettings(true, 100, false, 1));
    ManagedChannel channel = channel(node);
    nativeCall(channel, "a", 2);
    envoyCall(channel, "10.0.0.1");
    envoyCall(channel, "10.0.0.1");
    envoyCall(channel, "10.0.0.1");

    String metrics = get(node, "/metrics").body();

    assertThat(metrics)
        .contains(
            "weir_over_limit_decisions_total{domain=\"shop\",rule=\"per-ip\",source=\"envoy\"} 2.0")
        .contains(
            "weir_over_limit_decisions_total{domain=\"\",rule=\"login\",source=\"native\"} 1.0")
        .doesNotContain("rule=\"_other\"");
  }

  @Test
  void cluster_mergesEveryMembersKeys_overThePeerApi() throws Exception {
    int g1 = FreePorts.next();
    int g2 = FreePorts.next();
    int p1 = FreePorts.next();
    int p2 = FreePorts.next();
    List<String> peers = List.of("127.0.0.1:" + g1 + "@" + p1, "127.0.0.1:" + g2 + "@" + p2);
    WeirNode first = member(g1, p1, peers);
    WeirNode second = member(g2, p2, peers);
    for (WeirNode node : List.of(first, second)) {
      Await.until(
          Duration.ofSeconds(10),
          () -> node.cluster().membership().ring().peers().size() == 2,
          "both members on the ring");
    }
    ManagedChannel one = channel(first);
    ManagedChannel two = channel(second);
    nativeCall(one, "k", 1);
    nativeCall(one, "k", 1);
    nativeCall(one, "k", 1);
    nativeCall(two, "k", 1);
    nativeCall(two, "k", 1);
    nativeCall(two, "j", 2);
    nativeCall(two, "j", 2);

    List<Struct> local = keys(topLimited(first, "?scope=node"));
    Struct cluster = topLimited(first, "?scope=cluster");

    assertThat(local).hasSize(1);
    assertThat(number(local.get(0), "over_limit")).isEqualTo(2);
    assertThat(text(cluster, "scope")).isEqualTo("cluster");
    assertThat(cluster.getFieldsOrThrow("unreachable").getListValue().getValuesList()).isEmpty();
    List<Struct> merged = keys(cluster);
    assertThat(merged).extracting(k -> keyValue(k, 0)).containsExactly("k", "j");
    assertThat(number(merged.get(0), "over_limit")).isEqualTo(4);
    assertThat(number(merged.get(1), "over_limit")).isEqualTo(2);
    assertThat(number(merged.get(1), "hits")).isEqualTo(4);
  }

  @Test
  void cluster_aPeerWhoseKeysOutgrowAPeerMessage_answersWithTheFirstThatFit() throws Exception {
    int g1 = FreePorts.next();
    int g2 = FreePorts.next();
    int p1 = FreePorts.next();
    int p2 = FreePorts.next();
    List<String> peers = List.of("127.0.0.1:" + g1 + "@" + p1, "127.0.0.1:" + g2 + "@" + p2);
    // Names and keys of 8 KiB: 600 keys are about 10 MB, over a node's 4 MiB TopLimited answer.
    int longest = InputLimits.LONGEST_NAME_OR_KEY;
    OpsSettings longKeys =
        OpsSettings.from(
            new EnvReader(
                Map.of(
                    "WEIR_MAX_NAME_LENGTH", Integer.toString(longest),
                    "WEIR_MAX_KEY_LENGTH", Integer.toString(longest))));
    WeirNode first =
        memberBuilder(g1, p1, peers)
            .ops(longKeys)
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
    resources.add(first);
    WeirNode second =
        memberBuilder(g2, p2, peers)
            .ops(longKeys)
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
    resources.add(second);
    for (WeirNode node : List.of(first, second)) {
      Await.until(
          Duration.ofSeconds(10),
          () -> node.cluster().membership().ring().peers().size() == 2,
          "both members on the ring");
    }
    String name = "n".repeat(longest);
    String value = "v".repeat(longest - 4);
    ManagedChannel two = channel(second);
    int keys = 600;
    for (int i = 0; i < keys; i += 20) {
      GetRateLimitsReq.Builder call = GetRateLimitsReq.newBuilder();
      for (int j = i; j < i + 20; j++) {
        call.addRequests(
            RateLimitReq.newBuilder()
                .setName(name)
                .setUniqueKey(value + String.format("%04d", j))
                .setHits(2)
                .setLimit(1)
                .setDuration(60_000));
      }
      V1Grpc.newBlockingStub(two)
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .getRateLimits(call.build());
    }
    assertThat(number(topLimited(second, "?scope=node"), "over_limit_total")).isEqualTo(keys);

    Struct cluster = topLimited(first, "?scope=cluster&limit=5");

    assertThat(cluster.getFieldsOrThrow("unreachable").getListValue().getValuesList()).isEmpty();
    assertThat(number(cluster, "over_limit_total")).isEqualTo(keys);
    List<Struct> listed = keys(cluster);
    assertThat(listed).hasSize(5);
    assertThat(listed).allSatisfy(k -> assertThat(number(k, "over_limit")).isEqualTo(1));
  }

  @Test
  void cluster_aMemberWithTheViewOff_listedAsUnreachableNamingTheSetting() throws Exception {
    int g1 = FreePorts.next();
    int g2 = FreePorts.next();
    int p1 = FreePorts.next();
    int p2 = FreePorts.next();
    List<String> peers = List.of("127.0.0.1:" + g1 + "@" + p1, "127.0.0.1:" + g2 + "@" + p2);
    WeirNode on = member(g1, p1, peers);
    WeirNode off =
        memberBuilder(g2, p2, peers)
            .topLimited(new TopLimitedSettings(false, 100, false, 100))
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
    resources.add(off);
    for (WeirNode node : List.of(on, off)) {
      Await.until(
          Duration.ofSeconds(10),
          () -> node.cluster().membership().ring().peers().size() == 2,
          "both members on the ring");
    }
    ManagedChannel one = channel(on);
    nativeCall(one, "k", 1);
    nativeCall(one, "k", 1);

    Struct cluster = topLimited(on, "?scope=cluster");

    List<Struct> unreachable =
        cluster.getFieldsOrThrow("unreachable").getListValue().getValuesList().stream()
            .map(Value::getStructValue)
            .toList();
    assertThat(unreachable)
        .as("the member whose keys are not counted")
        .extracting(u -> text(u, "peer"))
        .containsExactly("127.0.0.1:" + g2);
    assertThat(text(unreachable.get(0), "error"))
        .isEqualTo(
            "error while asking for the top-limited keys of peer '127.0.0.1:"
                + g2
                + "': FAILED_PRECONDITION: this member does not count its top-limited keys"
                + " (WEIR_TOP_LIMITED=false there); set WEIR_TOP_LIMITED=true on it to include"
                + " them");
    assertThat(keys(cluster)).extracting(k -> keyValue(k, 0)).containsExactly("k");
    assertThat(on.cluster().liveness().troubled())
        .as("a member that answers it counts no keys is not a troubled peer")
        .isEmpty();
  }

  @Test
  void cluster_aMemberFoundDown_listedAsUnreachable() throws Exception {
    int grpcPort = FreePorts.next();
    int peerPort = FreePorts.next();
    String ghost = "127.0.0.1:" + FreePorts.next();
    WeirNode node =
        memberBuilder(
                grpcPort,
                peerPort,
                List.of("127.0.0.1:" + grpcPort + "@" + peerPort, ghost + "@" + FreePorts.next()))
            .start();
    resources.add(node);
    // Found down, the member is left off the ring; it is still a member, whose keys are missing.
    Await.until(
        Duration.ofSeconds(10),
        () ->
            node.cluster().liveness().isDown(ghost)
                && !node.cluster().membership().ring().peers().contains(ghost),
        "the member that never started is found down and left off the ring");

    Struct cluster = topLimited(node, "?scope=cluster");

    List<Struct> unreachable =
        cluster.getFieldsOrThrow("unreachable").getListValue().getValuesList().stream()
            .map(Value::getStructValue)
            .toList();
    assertThat(unreachable).extracting(u -> text(u, "peer")).containsExactly(ghost);
    assertThat(text(unreachable.get(0), "error")).isNotBlank();
  }
}
