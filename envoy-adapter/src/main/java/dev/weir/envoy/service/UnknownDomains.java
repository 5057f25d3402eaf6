package dev.weir.envoy.service;

import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.time.Clock;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.metrics.EnvoyMetrics;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts and logs requests for a domain no loaded config declares, which are answered OK with no
 * limit (as envoyproxy/ratelimit does): usually a domain spelled differently in Envoy's filter and
 * in the descriptor file.
 *
 * <p>Every such request counts in {@code weir.envoy.domain_not_found}, which has no domain tag so
 * that clients cannot create meters without bound. A WARN line names the domain at most once per
 * {@link #LOG_INTERVAL}; the first {@value #MAX_NAMED_DOMAINS} distinct domains get a line each,
 * any further ones share one line, and a domain is shown cut to {@value #MAX_SHOWN_CHARS}
 * characters with control characters escaped.
 */
public final class UnknownDomains {

  /** The shortest time between two log lines for one domain. */
  public static final Duration LOG_INTERVAL = Duration.ofMinutes(1);

  static final int MAX_NAMED_DOMAINS = 64;
  static final int MAX_SHOWN_CHARS = 128;

  private static final Logger LOG = LoggerFactory.getLogger(UnknownDomains.class);
  private static final String OTHERS = "";

  private final EnvoyMetrics metrics;
  private final RateLimitedLogger log;
  private final Set<String> named = ConcurrentHashMap.newKeySet();

  /** Creates the counter in {@code metrics}, logging on {@code clock}'s time. */
  public UnknownDomains(EnvoyMetrics metrics, Clock clock) {
    this(metrics, new RateLimitedLogger(LOG, clock, LOG_INTERVAL));
  }

  UnknownDomains(EnvoyMetrics metrics, RateLimitedLogger log) {
    this.metrics = metrics;
    this.log = log;
  }

  /** Counts and logs a request for {@code domain} when {@code found} is empty. */
  public void recordIfMissing(String domain, Optional<DomainConfig> found) {
    if (found.isEmpty()) {
      record(domain);
    }
  }

  /** Counts and logs a request for {@code domain}, which no loaded config declares. */
  public void record(String domain) {
    record("ShouldRateLimit", domain, "answered OK without a limit");
  }

  /**
   * Counts and logs a {@code call} (the API, as the log line names it) for {@code domain}, which no
   * loaded config declares, and was answered as {@code outcome} says.
   */
  public void record(String call, String domain, String outcome) {
    metrics.domainNotFound();
    String shown = shown(domain);
    if (named.contains(shown) || (named.size() < MAX_NAMED_DOMAINS && named.add(shown))) {
      log.warn(
          shown,
          "{} for domain '{}', which no loaded rate limit config declares: {} (counted in"
              + " weir.envoy.domain_not_found)",
          call,
          shown,
          outcome);
    } else {
      log.warn(
          OTHERS,
          "{} for more than {} domains no loaded rate limit config declares, such as '{}': {}"
              + " (counted in weir.envoy.domain_not_found)",
          call,
          MAX_NAMED_DOMAINS,
          shown,
          outcome);
    }
  }

  /** Returns {@code domain} cut to {@value #MAX_SHOWN_CHARS} chars, control characters escaped. */
  static String shown(String domain) {
    StringBuilder out = new StringBuilder();
    int end = Math.min(domain.length(), MAX_SHOWN_CHARS);
    for (int i = 0; i < end; i++) {
      char c = domain.charAt(i);
      if (Character.isISOControl(c)) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    if (domain.length() > end) {
      out.append("...(").append(domain.length()).append(" chars)");
    }
    return out.toString();
  }
}
