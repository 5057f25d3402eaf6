package dev.weir.envoy.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Envoy adapter's Micrometer meters: per-rule hit counters tagged by {@code domain} and {@code
 * rule} (the rule path, see {@link dev.weir.envoy.service.StatsKeys}), and service-level counters.
 * An {@link Observer} is told of each rule's counters once, when they are created, so that other
 * outputs (envoyproxy/ratelimit's stat names over StatsD) read the same counters instead of
 * counting again.
 */
public final class EnvoyMetrics {

  /** Told of each rule's counters when they are created; called once per domain and rule. */
  @FunctionalInterface
  public interface Observer {

    /** An observer that does nothing. */
    Observer NONE = (domain, rule, counters) -> {};

    /** Takes note of the counters of {@code rule} in {@code domain}. */
    void ruleCounters(String domain, String rule, RuleCounters counters);
  }

  /**
   * The service-level counters.
   *
   * @param configLoadSuccess configurations that loaded
   * @param configLoadError configurations that failed to load
   * @param globalShadowMode OVER_LIMIT answers turned into OK by the global shadow mode
   * @param serviceError calls answered with a gRPC error
   * @param domainNotFound calls for a domain no loaded config declares
   */
  public record ServiceCounters(
      Counter configLoadSuccess,
      Counter configLoadError,
      Counter globalShadowMode,
      Counter serviceError,
      Counter domainNotFound) {}

  /** The prefix of every meter name. */
  public static final String PREFIX = "weir.envoy.";

  /**
   * The most rule labels of each kind counted per domain, the kinds being labels built from request
   * values ({@code detailed_metric}, {@code value_to_metric}, limit overrides) and labels that are
   * rule paths of the config (which reloads may add to); later ones of a kind share {@link
   * #OTHER_RULES}, so that neither kind can grow the registry without bound nor use up the other's
   * labels.
   */
  public static final int MAX_RULES_PER_DOMAIN = 10_000;

  /** The rule label of every label of a kind beyond {@link #MAX_RULES_PER_DOMAIN}. */
  public static final String OTHER_RULES = "_other";

  /**
   * One domain's counters by rule label, and how many of the labels were built from values and how
   * many are config paths.
   */
  private record DomainRules(
      Map<String, RuleCounters> byRule, AtomicInteger fromValues, AtomicInteger fromConfig) {}

  private final MeterRegistry registry;
  private final Observer observer;
  private final Map<String, DomainRules> rules = new ConcurrentHashMap<>();
  private final Counter configLoadSuccess;
  private final Counter configLoadError;
  private final Counter globalShadowMode;
  private final Counter serviceError;
  private final Counter domainNotFound;

  /** Creates the meters in {@code registry}. */
  public EnvoyMetrics(MeterRegistry registry) {
    this(registry, Observer.NONE);
  }

  /** Creates the meters in {@code registry}, telling {@code observer} of each rule's counters. */
  public EnvoyMetrics(MeterRegistry registry, Observer observer) {
    this.registry = registry;
    this.observer = observer;
    this.configLoadSuccess = registry.counter(PREFIX + "config_load_success");
    this.configLoadError = registry.counter(PREFIX + "config_load_error");
    this.globalShadowMode = registry.counter(PREFIX + "global_shadow_mode");
    this.serviceError = registry.counter(PREFIX + "service_error");
    this.domainNotFound = registry.counter(PREFIX + "domain_not_found");
  }

  /**
   * Returns the counters of {@code rule} in {@code domain}, creating them on first use; when {@link
   * #MAX_RULES_PER_DOMAIN} labels of the domain of the same kind as {@code rule} (built from request
   * values when {@code fromValues}, else a config path) have counters, those of {@link
   * #OTHER_RULES}.
   */
  public RuleCounters rule(String domain, String rule, boolean fromValues) {
    DomainRules domainRules = rules.get(domain);
    if (domainRules == null) {
      domainRules =
          rules.computeIfAbsent(
              domain,
              d ->
                  new DomainRules(
                      new ConcurrentHashMap<>(), new AtomicInteger(), new AtomicInteger()));
    }
    Map<String, RuleCounters> byRule = domainRules.byRule();
    RuleCounters counters = byRule.get(rule);
    if (counters != null) {
      return counters;
    }
    AtomicInteger taken = fromValues ? domainRules.fromValues() : domainRules.fromConfig();
    if (taken.get() >= MAX_RULES_PER_DOMAIN) {
      return byRule.computeIfAbsent(OTHER_RULES, r -> create(domain, r));
    }
    return byRule.computeIfAbsent(
        rule,
        r -> {
          taken.incrementAndGet();
          return create(domain, r);
        });
  }

  private RuleCounters create(String domain, String rule) {
    RuleCounters counters =
        new RuleCounters(
            counter("total_hits", domain, rule),
            counter("over_limit", domain, rule),
            counter("near_limit", domain, rule),
            counter("within_limit", domain, rule),
            counter("shadow_mode", domain, rule));
    observer.ruleCounters(domain, rule, counters);
    return counters;
  }

  /** Returns the service-level counters. */
  public ServiceCounters service() {
    return new ServiceCounters(
        configLoadSuccess, configLoadError, globalShadowMode, serviceError, domainNotFound);
  }

  private Counter counter(String name, String domain, String rule) {
    return Counter.builder(PREFIX + "rate_limit." + name)
        .tag("domain", domain)
        .tag("rule", rule)
        .register(registry);
  }

  /** Counts a configuration that loaded. */
  public void configLoadSuccess() {
    configLoadSuccess.increment();
  }

  /** Counts a configuration that failed to load. */
  public void configLoadError() {
    configLoadError.increment();
  }

  /** Counts an OVER_LIMIT answer turned into OK by {@code WEIR_ENVOY_SHADOW_MODE}. */
  public void globalShadowMode() {
    globalShadowMode.increment();
  }

  /** Counts a call answered with a gRPC error. */
  public void serviceError() {
    serviceError.increment();
  }

  /** Counts a call for a domain no loaded config declares. */
  public void domainNotFound() {
    domainNotFound.increment();
  }
}
