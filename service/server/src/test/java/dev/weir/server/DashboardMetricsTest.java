package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FreePorts;
import dev.weir.envoy.EnvoySettings;
import dev.weir.proto.gubernator.Behavior;
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
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every query of the Grafana dashboard and every alert the docs give names a series a running
 * member of a two-node cluster exports, with that exact name (a histogram's {@code _bucket} and
 * {@code _count}, a counter's {@code _total}), the labels it groups or selects by, and
 * {@code rate} or {@code increase} only over counters.
 */
class DashboardMetricsTest {

  private static final Pattern SERIES =
      Pattern.compile("\\b((?:weir|jvm|process|system)_[a-z0-9_]+)\\b(\\{[^}]*})?");
  private static final Pattern GROUPING = Pattern.compile("\\b(?:by|without)\\s*\\(([^)]*)\\)");
  private static final Pattern SELECTOR_LABEL = Pattern.compile("([a-z_]+)\\s*(?:=~|!=|!~|=)");
  private static final Pattern ALERT = Pattern.compile("(?m)^\\s*-?\\s*expr:\\s*(.+)$");
  private static final Pattern DOC_ALERT = Pattern.compile("Alert(?: on)?:? `([^`]+)`");

  /** Labels Prometheus adds to every scraped series (the target's), not the node. */
  private static final Set<String> TARGET_LABELS = Set.of("instance", "job", "pod", "namespace");

  /** Series that need a discovery mechanism other than static peers, see DiscoveryMetricsTest. */
  private static final Set<String> DISCOVERY_ONLY =
      Set.of("weir_discovery_errors_total", "weir_discovery_healthy");

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 1, name: per-ip}
      """;

  @TempDir Path dir;
  private final List<AutoCloseable> resources = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stop() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  @Test
  void dashboardAndDocumentedAlerts_queryOnlySeriesAMemberExports() throws Exception {
    List<String> queries = new ArrayList<>(dashboardQueries());
    queries.addAll(documentedAlerts());
    Set<String> wanted = new TreeSet<>();
    for (String query : queries) {
      for (Reference reference : references(query)) {
        if (!DISCOVERY_ONLY.contains(reference.name())) {
          wanted.add(reference.name());
        }
      }
    }
    WeirNode first = twoNodeCluster();
    ManagedChannel channel = channel(first);
    drive(channel, first);
    // jvm_gc_pause_seconds (the dashboard's GC panel) has no series until a collection has run.
    System.gc();

    String text =
        MetricsScrape.until(http, first.httpPort(), t -> missing(parse(t), wanted).isEmpty());
    Scrape scrape = parse(text);

    List<String> wrong = new ArrayList<>();
    for (String query : queries) {
      for (Reference reference : references(query)) {
        if (!DISCOVERY_ONLY.contains(reference.name())) {
          String problem = scrape.problem(reference);
          if (problem != null) {
            wrong.add(problem + " in `" + query + "`");
          }
        }
      }
    }
    assertThat(queries).hasSizeGreaterThan(20);
    assertThat(wrong).isEmpty();
  }

  @Test
  void references_nameWithDigits_keptWhole() {
    assertThat(references("rate(weir_l2_hits_total[5m])"))
        .containsExactly(new Reference("weir_l2_hits_total", Set.of(), true));
  }

  @Test
  void references_groupingAfterTheAggregatedExpression_labelsChecked() {
    assertThat(references("sum(rate(weir_peer_batches_total{code=\"OK\"}[5m])) by (peer)"))
        .containsExactly(new Reference("weir_peer_batches_total", Set.of("code", "peer"), true));
  }

  @Test
  void references_groupingAfterAnotherAggregation_notApplied() {
    assertThat(references("sum(weir_a_total) + sum(rate(weir_b_total[5m])) by (peer)"))
        .containsExactly(
            new Reference("weir_a_total", Set.of(), false),
            new Reference("weir_b_total", Set.of("peer"), true));
  }

  @Test
  void references_trailingGroupingThenAnotherAggregation_appliedToItsOwnOnly() {
    assertThat(references("sum(weir_a_total) by (peer) + sum(weir_b_total)"))
        .containsExactly(
            new Reference("weir_a_total", Set.of("peer"), false),
            new Reference("weir_b_total", Set.of(), false));
  }

  @Test
  void references_groupingBeforeTheAggregatedExpression_labelsChecked() {
    assertThat(references("sum by (instance, peer) (weir_peer_up)"))
        .containsExactly(new Reference("weir_peer_up", Set.of("peer"), false));
  }

  /** A metric a query names, the labels it groups or selects it by and whether it rates it. */
  record Reference(String name, Set<String> labels, boolean rated) {}

  /** The metrics of one query, each with the labels of its selector and enclosing groupings. */
  static List<Reference> references(String query) {
    List<Reference> out = new ArrayList<>();
    Matcher series = SERIES.matcher(query);
    while (series.find()) {
      Set<String> labels = new HashSet<>();
      if (series.group(2) != null) {
        Matcher label = SELECTOR_LABEL.matcher(series.group(2));
        while (label.find()) {
          labels.add(label.group(1));
        }
      }
      Matcher grouping = GROUPING.matcher(query);
      while (grouping.find()) {
        if (aggregates(query, grouping, series.start())) {
          for (String label : grouping.group(1).split(",")) {
            if (!label.isBlank()) {
              labels.add(label.strip());
            }
          }
        }
      }
      labels.removeAll(TARGET_LABELS);
      String before = query.substring(0, series.start()).stripTrailing();
      boolean rated = before.endsWith("rate(") || before.endsWith("increase(");
      out.add(new Reference(series.group(1), labels, rated));
    }
    return out;
  }

  /**
   * Whether {@code grouping} belongs to an aggregation whose parenthesised body holds {@code at}:
   * the body follows the clause ({@code sum by (peer) (x)}) or precedes it
   * ({@code sum(x) by (peer)}).
   */
  private static boolean aggregates(String query, Matcher grouping, int at) {
    int after = grouping.end();
    while (after < query.length() && Character.isWhitespace(query.charAt(after))) {
      after++;
    }
    if (after < query.length() && query.charAt(after) == '(' && after < at) {
      return encloses(query, after, at);
    }
    int before = grouping.start() - 1;
    while (before >= 0 && Character.isWhitespace(query.charAt(before))) {
      before--;
    }
    if (before < 0 || query.charAt(before) != ')' || before < at) {
      return false;
    }
    int depth = 0;
    for (int i = before; i >= 0; i--) {
      char c = query.charAt(i);
      if (c == ')') {
        depth++;
      } else if (c == '(' && --depth == 0) {
        return i < at;
      }
    }
    return false;
  }

  /** Whether the parenthesis at {@code open} closes after {@code at}. */
  private static boolean encloses(String query, int open, int at) {
    int depth = 0;
    for (int i = open; i < query.length(); i++) {
      char c = query.charAt(i);
      if (c == '(') {
        depth++;
      } else if (c == ')' && --depth == 0) {
        return i > at;
      }
    }
    return false;
  }

  /** A scrape's samples (name and label names) and its families' types. */
  record Scrape(Map<String, List<Set<String>>> samples, Map<String, String> types) {

    /** Returns what is wrong with {@code reference} in this scrape, or null. */
    String problem(Reference reference) {
      List<Set<String>> labelSets = samples.get(reference.name());
      if (labelSets == null) {
        return reference.name() + " is not exported";
      }
      if (labelSets.stream().noneMatch(set -> set.containsAll(reference.labels()))) {
        return reference.name() + " has no series with labels " + reference.labels()
            + " (exported: " + new TreeSet<>(labelSets.stream().flatMap(Set::stream).toList())
            + ")";
      }
      String type = type(reference.name());
      if (reference.rated() && !type.equals("counter") && !type.equals("histogram")
          && !type.equals("summary")) {
        return reference.name() + " is a " + type + ", which rate() and increase() misread";
      }
      return null;
    }

    private String type(String name) {
      for (String suffix : List.of("", "_bucket", "_count", "_sum")) {
        if (name.endsWith(suffix)) {
          String type = types.get(name.substring(0, name.length() - suffix.length()));
          if (type != null) {
            return type;
          }
        }
      }
      return "untyped";
    }
  }

  static Scrape parse(String text) {
    Map<String, List<Set<String>>> samples = new HashMap<>();
    Map<String, String> types = new HashMap<>();
    Pattern label = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"");
    for (String line : text.split("\n")) {
      if (line.startsWith("# TYPE ")) {
        String[] parts = line.split(" ");
        types.put(parts[2], parts[3]);
      } else if (!line.isBlank() && !line.startsWith("#")) {
        int end = line.indexOf('{');
        int space = line.indexOf(' ');
        String name = line.substring(0, end >= 0 && end < space ? end : space);
        Set<String> labels = new HashSet<>();
        if (end >= 0 && end < space) {
          Matcher m = label.matcher(line.substring(end, line.lastIndexOf('}')));
          while (m.find()) {
            labels.add(m.group(1));
          }
        }
        samples.computeIfAbsent(name, n -> new ArrayList<>()).add(labels);
      }
    }
    return new Scrape(samples, types);
  }

  private static Set<String> missing(Scrape scrape, Set<String> wanted) {
    Set<String> out = new TreeSet<>(wanted);
    out.removeAll(scrape.samples().keySet());
    return out;
  }

  private static List<String> dashboardQueries() throws Exception {
    Struct.Builder dashboard = Struct.newBuilder();
    JsonFormat.parser()
        .merge(
            Files.readString(
                RepoRoot.find().resolve("manifests/monitoring/dashboard/weir-dashboard.json")),
            dashboard);
    List<String> out = new ArrayList<>();
    collectExpressions(Value.newBuilder().setStructValue(dashboard).build(), out);
    return out;
  }

  private static void collectExpressions(Value value, List<String> out) {
    if (value.hasStructValue()) {
      for (Map.Entry<String, Value> field : value.getStructValue().getFieldsMap().entrySet()) {
        if (field.getKey().equals("expr") && field.getValue().hasStringValue()) {
          out.add(field.getValue().getStringValue());
        } else {
          collectExpressions(field.getValue(), out);
        }
      }
    } else if (value.hasListValue()) {
      value.getListValue().getValuesList().forEach(v -> collectExpressions(v, out));
    }
  }

  /** The alert expressions in docs/*.md: {@code expr:} lines and "Alert on `...`" advice. */
  private static List<String> documentedAlerts() throws Exception {
    List<String> out = new ArrayList<>();
    try (var files = Files.list(RepoRoot.find().resolve("docs"))) {
      for (Path file : files.filter(f -> f.toString().endsWith(".md")).sorted().toList()) {
        String text = Files.readString(file);
        for (Pattern pattern : List.of(ALERT, DOC_ALERT)) {
          Matcher m = pattern.matcher(text);
          while (m.find()) {
            out.add(m.group(1).strip());
          }
        }
      }
    }
    return out;
  }

  private WeirNode twoNodeCluster() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    int g1 = FreePorts.next();
    int g2 = FreePorts.next();
    int p1 = FreePorts.next();
    int p2 = FreePorts.next();
    List<String> peers = List.of("127.0.0.1:" + g1 + "@" + p1, "127.0.0.1:" + g2 + "@" + p2);
    WeirNode first =
        member(g1, p1, peers)
            .envoy(EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_CONFIG", dir.toString())))
            .start();
    resources.add(first);
    WeirNode second = member(g2, p2, peers).start();
    resources.add(second);
    for (WeirNode node : List.of(first, second)) {
      Await.until(
          Duration.ofSeconds(10),
          () -> node.cluster().membership().ring().peers().size() == 2,
          "both members on the ring");
    }
    return first;
  }

  private void drive(ManagedChannel channel, WeirNode node) throws Exception {
    V1Grpc.V1BlockingStub v1 =
        V1Grpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
    GetRateLimitsReq.Builder items = GetRateLimitsReq.newBuilder();
    for (int i = 0; i < 20; i++) {
      for (Behavior behavior : List.of(Behavior.BATCHING, Behavior.GLOBAL)) {
        items.addRequests(
            RateLimitReq.newBuilder()
                .setName("login-" + behavior)
                .setUniqueKey("k" + i)
                .setHits(1)
                .setLimit(1)
                .setDuration(60_000)
                .setBehavior(behavior));
      }
    }
    v1.getRateLimits(items.build());
    v1.getRateLimits(items.build());
    RateLimitServiceGrpc.RateLimitServiceBlockingStub envoy =
        RateLimitServiceGrpc.newBlockingStub(channel);
    for (int i = 0; i < 2; i++) {
      envoy.shouldRateLimit(
          RateLimitRequest.newBuilder()
              .setDomain("shop")
              .addDescriptors(
                  RateLimitDescriptor.newBuilder()
                      .addEntries(
                          RateLimitDescriptor.Entry.newBuilder()
                              .setKey("remote_address")
                              .setValue("10.0.0.1")))
              .build());
    }
    http.send(
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + node.httpPort() + "/v1/GetRateLimits"))
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"requests\":[{\"name\":\"n\",\"unique_key\":\"h\",\"hits\":1,"
                        + "\"limit\":5,\"duration\":60000}]}"))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private ManagedChannel channel(WeirNode node) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return channel;
  }

  private static WeirNode.Builder member(int grpcPort, int peerPort, List<String> peers) {
    return StaticMembers.builder(grpcPort, peerPort, peers, "dashboard-metrics-test-peer-secret");
  }

}
