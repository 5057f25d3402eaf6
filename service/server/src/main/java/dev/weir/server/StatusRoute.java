package dev.weir.server;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.peer.PeerLiveness;
import dev.weir.core.health.HealthReport;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.config.DescriptorLevel;
import dev.weir.envoy.config.DescriptorNode;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.config.RateLimitRule;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.service.Explainer;
import dev.weir.envoy.service.StatsKeys;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpRoute;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * {@code GET /v1/Status}: the node's view of its cluster as JSON, for the status page ({@link
 * StatusPage}): its readiness and health components, each member with its reachability and share of
 * the hash ring, and, with the Envoy adapter on, the loaded descriptor rules per domain with their
 * hit and over-limit counters (cumulative; the page turns them into rates). It names no counter
 * key, request value nor secret: a rule counted per request value (one whose labels {@link
 * StatsKeys#configLabel} finds built from request values) has no counts of its own, only its
 * domain's totals count it.
 */
final class StatusRoute {

  /** The route's path. */
  static final String PATH = "/v1/Status";

  private static final String TOTAL_HITS = EnvoyMetrics.PREFIX + "rate_limit.total_hits";
  private static final String OVER_LIMIT = EnvoyMetrics.PREFIX + "rate_limit.over_limit";

  private final ClusterNode cluster;
  private final EnvoyAdapter envoy;
  private final MeterRegistry registry;

  /**
   * Creates the route over {@code cluster}, the Envoy adapter {@code envoy} (null when off) and the
   * registry its rule counters are in.
   */
  StatusRoute(ClusterNode cluster, EnvoyAdapter envoy, MeterRegistry registry) {
    this.cluster = cluster;
    this.envoy = envoy;
    this.registry = registry;
  }

  /**
   * Returns the route to mount on the HTTP listener; its answer is never stored by a cache, so a
   * reverse proxy in front of the page never serves an earlier view of the cluster.
   */
  HttpRoute route() {
    return HttpRoute.get(PATH, call -> HttpAnswer.json(200, json()).noStore().completed());
  }

  /** Returns the status as JSON, see README's endpoint table for its fields. */
  String json() {
    HealthReport report = cluster.health().report();
    String readiness = ReadinessRoute.json(report);
    StringBuilder out =
        new StringBuilder("{\"self\":")
            .append(HttpAnswer.jsonString(cluster.self()))
            .append(",\"healthy\":")
            .append(report.healthy())
            .append(",\"message\":")
            .append(HttpAnswer.jsonString(report.message()))
            .append(',')
            .append(readiness, 1, readiness.length() - 1)
            .append(",\"members\":");
    members(out);
    out.append(",\"envoy\":");
    envoy(out);
    return out.append('}').toString();
  }

  private void members(StringBuilder out) {
    Map<String, Double> shares = cluster.membership().ring().shares();
    Map<String, PeerLiveness.PeerState> states = new HashMap<>();
    for (PeerLiveness.PeerState state : cluster.liveness().troubled()) {
      states.put(state.peer(), state);
    }
    Set<String> addresses = new TreeSet<>(cluster.membership().members());
    addresses.addAll(shares.keySet());
    addresses.add(cluster.self());
    out.append('[');
    String comma = "";
    for (String address : addresses) {
      PeerLiveness.PeerState state = states.get(address);
      boolean up = state == null || state.up();
      out.append(comma)
          .append("{\"address\":")
          .append(HttpAnswer.jsonString(address))
          .append(",\"self\":")
          .append(address.equals(cluster.self()))
          .append(",\"in_ring\":")
          .append(shares.containsKey(address))
          .append(",\"ring_share\":")
          .append(shares.getOrDefault(address, 0.0))
          .append(",\"reachable\":")
          .append(up)
          .append(",\"error\":")
          .append(HttpAnswer.jsonString(state == null ? "" : state.error()))
          .append(",\"down_for_ms\":")
          .append(state == null ? 0 : state.downFor().toMillis())
          .append('}');
      comma = ",";
    }
    out.append(']');
  }

  private void envoy(StringBuilder out) {
    Optional<EnvoyConfig> config = envoy == null ? Optional.empty() : envoy.config();
    out.append("{\"enabled\":").append(envoy != null).append(",\"domains\":[");
    if (config.isPresent()) {
      Map<String, Map<String, double[]>> counts = ruleCounts();
      String comma = "";
      for (String domain : new TreeSet<>(config.get().domains().keySet())) {
        out.append(comma);
        domain(out, config.get().domains().get(domain), counts.getOrDefault(domain, Map.of()));
        comma = ",";
      }
    }
    out.append("]}");
  }

  private static void domain(StringBuilder out, DomainConfig domain, Map<String, double[]> counts) {
    double hits = 0;
    double over = 0;
    for (double[] c : counts.values()) {
      hits += c[0];
      over += c[1];
    }
    out.append("{\"domain\":")
        .append(HttpAnswer.jsonString(domain.domain()))
        .append(",\"total_hits\":")
        .append((long) hits)
        .append(",\"over_limit\":")
        .append((long) over)
        .append(",\"rules\":[");
    List<String> rules = new ArrayList<>();
    rules(domain.root(), new ArrayList<>(), counts, rules);
    out.append(String.join(",", rules)).append("]}");
  }

  /** Adds the rules under {@code level}, which the rules {@code path} lead to, to {@code out}. */
  private static void rules(
      DescriptorLevel level,
      List<DescriptorNode> path,
      Map<String, double[]> counts,
      List<String> out) {
    for (DescriptorNode node : level.nodes()) {
      path.add(node);
      if (node.hasLimit()) {
        out.add(rule(node, StatsKeys.configLabel(path), counts));
      }
      rules(node.children(), path, counts, out);
      path.remove(path.size() - 1);
    }
  }

  /**
   * Returns the JSON of the rule {@code node}, with the counts of its {@code label}, none when it
   * is labelled by request values.
   */
  private static String rule(
      DescriptorNode node, Optional<String> label, Map<String, double[]> counts) {
    List<String> policies = new ArrayList<>();
    for (RateLimitRule rule : node.limits()) {
      policies.add(rule.unlimited() ? "unlimited" : Explainer.policyText(rule));
    }
    boolean perValue = label.isEmpty();
    double[] c = perValue ? new double[2] : counts.getOrDefault(label.get(), new double[2]);
    StringBuilder out =
        new StringBuilder("{\"rule\":")
            .append(HttpAnswer.jsonString(node.path()))
            .append(",\"source\":")
            .append(HttpAnswer.jsonString(node.source()))
            .append(",\"limit\":")
            .append(HttpAnswer.jsonString(String.join("; ", policies)))
            .append(",\"shadow_mode\":")
            .append(node.shadowMode())
            .append(",\"counted_per_value\":")
            .append(perValue);
    if (!perValue) {
      out.append(",\"total_hits\":")
          .append((long) c[0])
          .append(",\"over_limit\":")
          .append((long) c[1]);
    }
    return out.append('}').toString();
  }

  /** Returns the hit and over-limit counts by domain and rule label. */
  private Map<String, Map<String, double[]>> ruleCounts() {
    Map<String, Map<String, double[]>> out = new HashMap<>();
    add(out, TOTAL_HITS, 0);
    add(out, OVER_LIMIT, 1);
    return out;
  }

  private void add(Map<String, Map<String, double[]>> out, String name, int slot) {
    for (Counter counter : registry.find(name).counters()) {
      String domain = counter.getId().getTag("domain");
      String rule = counter.getId().getTag("rule");
      if (domain != null && rule != null) {
        out.computeIfAbsent(domain, d -> new HashMap<>())
                .computeIfAbsent(rule, r -> new double[2])[slot] +=
            counter.count();
      }
    }
  }
}
