package dev.weir.envoy.service;

import dev.weir.envoy.config.DescriptorLevel;
import dev.weir.envoy.config.DescriptorNode;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.config.EnvoyConfig;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The {@code ShouldRateLimit} requests a start-up warm-up sends: each names one of the config's
 * limited rules (and, when it has one, the next rule of the same domain) with entries the rule
 * matches, the way a proxy's descriptors reach it. A rule's exact values are sent as written, a
 * key-only rule gets a made-up value and a {@code *} pattern the same made-up text in place of each
 * {@code *}: every other request one of {@value #HOT_VALUES} values, the others one of {@value
 * #COLD_VALUES}, so that the requests keep counting on a few buckets while adding others, which a
 * small store has to make room for.
 */
public final class WarmUpRequests {

  /** How many values a key-only or pattern rule is sent with in every other request. */
  public static final int HOT_VALUES = 8;

  /** How many other values a key-only or pattern rule is sent with. */
  public static final int COLD_VALUES = 1024;

  private WarmUpRequests() {}

  /**
   * Returns {@code count} requests for the limited rules of {@code config}, in domain order; none
   * when it has no limited rule.
   *
   * @throws IllegalArgumentException when {@code count} is negative
   */
  public static List<RateLimitRequest> from(EnvoyConfig config, int count) {
    if (count < 0) {
      throw new IllegalArgumentException("count must be at least 0, got " + count);
    }
    List<Target> targets = new ArrayList<>();
    config.domains().values().stream()
        .sorted(Comparator.comparing(DomainConfig::domain))
        .forEach(domain -> collect(domain.domain(), domain.root(), List.of(), targets));
    List<RateLimitRequest> requests = new ArrayList<>(targets.isEmpty() ? 0 : count);
    for (int i = 0; !targets.isEmpty() && i < count; i++) {
      Target target = targets.get(i % targets.size());
      Target next = targets.get((i + 1) % targets.size());
      int variant = variant(i / targets.size());
      RateLimitRequest.Builder request =
          RateLimitRequest.newBuilder()
              .setDomain(target.domain())
              .addDescriptors(target.descriptor(variant));
      if (next != target && next.domain().equals(target.domain())) {
        request.addDescriptors(next.descriptor(variant));
      }
      requests.add(request.build());
    }
    return requests;
  }

  /**
   * Returns the made-up value number of the {@code n}th use of a rule: for even {@code n} one of
   * the first {@value #HOT_VALUES}, for odd {@code n} one of the next {@value #COLD_VALUES}.
   */
  public static int variant(int n) {
    return n % 2 == 0 ? n / 2 % HOT_VALUES : HOT_VALUES + n / 2 % COLD_VALUES;
  }

  /** Adds a target for every limited rule at or under {@code level}, below {@code path}. */
  private static void collect(
      String domain, DescriptorLevel level, List<DescriptorNode> path, List<Target> targets) {
    for (DescriptorNode node : level.nodes()) {
      List<DescriptorNode> below = new ArrayList<>(path);
      below.add(node);
      if (node.hasLimit()) {
        targets.add(new Target(domain, List.copyOf(below)));
      }
      collect(domain, node.children(), below, targets);
    }
  }

  /** One limited rule: its domain and the rules from the domain down to it. */
  private record Target(String domain, List<DescriptorNode> path) {

    /** Returns a descriptor this target's rule matches, with made-up values of {@code variant}. */
    RateLimitDescriptor descriptor(int variant) {
      RateLimitDescriptor.Builder descriptor = RateLimitDescriptor.newBuilder();
      for (DescriptorNode node : path) {
        descriptor.addEntriesBuilder().setKey(node.key()).setValue(value(node, variant));
      }
      return descriptor.build();
    }

    private static String value(DescriptorNode node, int variant) {
      String madeUp = "warm-up-" + variant;
      if (node.isKeyOnly()) {
        return madeUp;
      }
      return node.isWildcard() ? node.value().replace("*", madeUp) : node.value();
    }
  }
}
