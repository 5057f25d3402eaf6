package dev.weir.envoy.service;

import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.envoy.config.DescriptorNode;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.config.RateLimitRule;
import dev.weir.envoy.match.DescriptorMatcher;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.MatchTrace;
import dev.weir.envoy.match.MatchedLevel;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;

/**
 * Explains how a loaded config answers the descriptors of one {@code ShouldRateLimit} call, for
 * {@code weir.jar explain}: per descriptor, the limit override it carries, or the rule it matched
 * with its file and line, or where matching stopped and the rules that were candidates there; then
 * the counter key and the policies (algorithm, window, flags) and what {@code replaces} removed.
 * Pure: the current counts come from a function the caller gives.
 */
public final class Explainer {

  private final DescriptorPlanner planner;

  /** Creates the explainer writing counter keys as a node with {@code limits} does. */
  public Explainer(InputLimits limits) {
    this.planner =
        new DescriptorPlanner(
            CounterKeys.of(limits), limits.maxDescriptorEntries());
  }

  /**
   * Returns the lines explaining {@code descriptors} in {@code domain} of {@code config}, planned
   * as a {@code ShouldRateLimit} call plans them (a descriptor's {@code limit} override skips
   * matching); after each counted policy, {@code current} may add a line about its counter (empty
   * for none). The requests it is given check without consuming ({@code hits} 0, whatever a
   * descriptor's {@code hits_addend}).
   */
  public List<String> explain(
      EnvoyConfig config,
      String domain,
      List<RateLimitDescriptor> descriptors,
      Function<RateLimitRequest, Optional<String>> current) {
    List<String> out = new ArrayList<>();
    Optional<DomainConfig> found = config.domain(domain);
    if (found.isEmpty()) {
      out.add(
          "domain '"
              + domain
              + "' is not in the config, so nothing is limited; domains: "
              + String.join(", ", config.domains().keySet()));
      return out;
    }
    List<DescriptorPlan> plans = new ArrayList<>();
    for (RateLimitDescriptor descriptor : descriptors) {
      RateLimitDescriptor check = descriptor.toBuilder().clearHitsAddend().build();
      plans.add(planner.plan(domain, found.get(), check, 0, 0));
    }
    List<DescriptorPlan> replaced = new ArrayList<>(plans);
    DescriptorPlan.applyReplaces(replaced);
    for (int i = 0; i < descriptors.size(); i++) {
      List<Entry> entries = DescriptorPlanner.entries(descriptors.get(i));
      out.add("descriptor " + (i + 1) + ": " + render(entries));
      DescriptorPlan plan = plans.get(i);
      if (plan instanceof DescriptorPlan.Refused refused) {
        out.add("  answered OVER_LIMIT without counting: " + refusal(refused));
        continue;
      }
      if (descriptors.get(i).hasLimit()) {
        explainOverride(out, (DescriptorPlan.Limited) plan, current);
        continue;
      }
      MatchTrace trace = DescriptorMatcher.trace(found.get().root(), entries);
      if (trace.match().isEmpty()) {
        explainNoMatch(out, entries, trace);
        continue;
      }
      DescriptorNode node = trace.match().get().node();
      out.add("  matched: " + path(trace.matched()) + " (" + node.source() + ")");
      if (plan instanceof DescriptorPlan.Unlimited) {
        out.add(
            replaced.get(i) instanceof DescriptorPlan.NoLimit
                ? "  unlimited, but replaced by another matched rule: no limit"
                : "  unlimited: never limited");
        continue;
      }
      DescriptorPlan.Limited limited = (DescriptorPlan.Limited) plan;
      RateLimitRequest first = limited.policies().get(0).request();
      out.add("  counter: unique_key " + quote(first.uniqueKey()));
      if (node.shadowMode()) {
        out.add("  shadow_mode: over-limit answers are reported as OK");
      }
      if (node.quotaMode()) {
        out.add("  quota_mode: over the limit only when every quota_mode descriptor is");
      }
      List<DescriptorPlan.Policy> kept =
          replaced.get(i) instanceof DescriptorPlan.Limited l ? l.policies() : List.of();
      for (int p = 0; p < limited.policies().size(); p++) {
        DescriptorPlan.Policy policy = limited.policies().get(p);
        RateLimitRule rule = node.limits().get(p);
        out.add(
            "  policy "
                + (p + 1)
                + ": "
                + policyText(rule)
                + ", counter name "
                + quote(policy.request().name()));
        if (!kept.contains(policy)) {
          out.add("    replaced by another matched rule: not counted");
          continue;
        }
        current.apply(policy.request()).ifPresent(line -> out.add("    " + line));
      }
    }
    return out;
  }

  /**
   * Adds the lines of a descriptor carrying Envoy's limit override: its one policy, counted per
   * entry set under the override's unit whatever the rules say.
   */
  private static void explainOverride(
      List<String> out,
      DescriptorPlan.Limited plan,
      Function<RateLimitRequest, Optional<String>> current) {
    DescriptorPlan.Policy policy = plan.policies().get(0);
    String limit =
        policy.requestsPerUnit() + " per " + policy.unit().name().toLowerCase(Locale.ROOT);
    out.add("  limit override: " + limit + ", from the descriptor's limit; rules are not matched");
    out.add("  counter: unique_key " + quote(policy.request().uniqueKey()));
    out.add(
        "  policy 1: "
            + limit
            + ", fixed_window, limit override, counter name "
            + quote(policy.request().name()));
    current.apply(policy.request()).ifPresent(line -> out.add("    " + line));
  }

  private static void explainNoMatch(List<String> out, List<Entry> entries, MatchTrace trace) {
    if (!trace.matched().isEmpty()) {
      out.add("  matched so far: " + path(trace.matched()));
    }
    String where =
        trace.stoppedAt() >= 0 && trace.stoppedAt() < entries.size()
            ? " (at entry " + (trace.stoppedAt() + 1) + ")"
            : "";
    out.add("  no limit: " + trace.reason() + where);
    if (!trace.candidates().isEmpty()) {
      List<String> names = new ArrayList<>();
      for (DescriptorNode node : trace.candidates()) {
        names.add(candidate(node));
      }
      out.add("  candidates there: " + String.join(", ", names));
    }
  }

  private static String candidate(DescriptorNode node) {
    String kind = node.isKeyOnly() ? ", any value" : node.isWildcard() ? ", wildcard" : "";
    String text = node.isKeyOnly() ? node.key() : node.key() + "=" + node.value();
    return text + " (" + node.source() + kind + ")";
  }

  private static String path(List<MatchedLevel> levels) {
    List<String> parts = new ArrayList<>();
    for (MatchedLevel level : levels) {
      DescriptorNode node = level.node();
      String how =
          switch (level.kind()) {
            case EXACT -> node.key() + "=" + node.value();
            case WILDCARD -> node.key() + "=" + node.value() + " (wildcard)";
            case KEY_ONLY -> node.key() + " (any value)";
          };
      parts.add(how);
    }
    return String.join(" > ", parts);
  }

  /**
   * Returns a policy as {@code 100 per 5 minutes, fixed_window, name "daily"} (a calendar window as
   * {@code per calendar month in Europe/Berlin}).
   */
  public static String policyText(RateLimitRule rule) {
    String unit = rule.unit().name().toLowerCase(Locale.ROOT);
    String window =
        rule.unitMultiplier() == 1 ? unit : rule.unitMultiplier() + " " + unit + "s";
    if (rule.calendar().isPresent()) {
      window = "calendar " + unit + " in " + rule.calendar().get().zone().getId();
    }
    StringBuilder out =
        new StringBuilder()
            .append(rule.requestsPerUnit())
            .append(" per ")
            .append(window)
            .append(", ")
            .append(rule.algorithm().name().toLowerCase(Locale.ROOT));
    if (rule.burst() > 0) {
      out.append(", burst ").append(rule.burst());
    }
    List<String> flags = new ArrayList<>();
    if (Behavior.has(rule.behavior(), Behavior.GLOBAL)) {
      flags.add("global");
    }
    if (Behavior.has(rule.behavior(), Behavior.NO_BATCHING)) {
      flags.add("no_batching");
    }
    if (Behavior.has(rule.behavior(), Behavior.DRAIN_OVER_LIMIT)) {
      flags.add("drain_over_limit");
    }
    if (!flags.isEmpty()) {
      out.append(", behavior ").append(String.join("|", flags));
    }
    if (!rule.name().isEmpty()) {
      out.append(", name ").append(quote(rule.name()));
    }
    if (!rule.replaces().isEmpty()) {
      out.append(", replaces ").append(String.join(", ", rule.replaces()));
    }
    return out.toString();
  }

  private static String refusal(DescriptorPlan.Refused refused) {
    return switch (refused.reason()) {
      case TOO_MANY_ENTRIES -> "more entries than WEIR_MAX_DESCRIPTOR_ENTRIES allows";
      case INVALID_OVERRIDE -> "a limit override without a valid unit or without entries";
      default -> refused.reason().label();
    };
  }

  private static String render(List<Entry> entries) {
    List<String> parts = new ArrayList<>();
    for (Entry e : entries) {
      parts.add(e.key() + "=" + e.value());
    }
    return String.join(", ", parts);
  }

  private static String quote(String text) {
    return "\"" + text + "\"";
  }
}
