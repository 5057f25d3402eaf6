package dev.weir.envoy.config;

import java.util.TreeMap;

/**
 * The loaded config as envoyproxy/ratelimit's debug endpoint {@code /rlconfig} prints it: one line
 * per rule with a limit, {@code <domain>.<path>: unit=<UNIT> requests_per_unit=<n>, shadow_mode:
 * <bool>, quota_mode: <bool>}, in config order, domains sorted by name; a rule with several policies ({@code
 * rate_limits}) prints a line for each.
 */
public final class ConfigDump {

  private ConfigDump() {}

  /** Returns the dump of {@code config}. */
  public static String of(EnvoyConfig config) {
    StringBuilder out = new StringBuilder();
    new TreeMap<>(config.domains())
        .forEach((name, domain) -> level(out, name + ".", domain.root()));
    return out.toString();
  }

  private static void level(StringBuilder out, String prefix, DescriptorLevel level) {
    for (DescriptorNode node : level.nodes()) {
      for (RateLimitRule rule : node.limits()) {
        out.append(prefix)
            .append(node.path())
            .append(": unit=")
            .append(rule.unit().name())
            .append(" requests_per_unit=")
            .append(rule.requestsPerUnit())
            .append(", shadow_mode: ")
            .append(node.shadowMode())
            .append(", quota_mode: ")
            .append(node.quotaMode())
            .append('\n');
      }
      level(out, prefix, node.children());
    }
  }
}
