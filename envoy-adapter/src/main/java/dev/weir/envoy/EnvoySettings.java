package dev.weir.envoy;

import dev.weir.core.model.Algorithm;
import dev.weir.envoy.config.ConfigLoadOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The Envoy adapter's settings, read from {@code WEIR_ENVOY_*} environment variables; each
 * envoyproxy/ratelimit setting that changes decisions or responses keeps its own name after the prefix.
 *
 * @param config the descriptor file or directory; empty disables the adapter
 * @param mergeDomainConfig whether several files may declare the same domain
 * @param defaultAlgorithm the algorithm of rules that name none
 * @param shadowMode whether an OVER_LIMIT overall answer is turned into OK
 * @param responseHeadersEnabled whether the RateLimit-* response headers are added
 * @param limitHeader the name of the limit header
 * @param remainingHeader the name of the remaining header
 * @param resetHeader the name of the reset header
 * @param stopCacheKeyIncrementWhenOverlimit whether a request over any limit leaves its other counters
 *     untouched
 * @param nearLimitRatio the fraction of a limit above which hits count as near the limit
 * @param reloadInterval how often the config path is checked for changes
 */
public record EnvoySettings(
    Optional<Path> config,
    boolean mergeDomainConfig,
    Algorithm defaultAlgorithm,
    boolean shadowMode,
    boolean responseHeadersEnabled,
    String limitHeader,
    String remainingHeader,
    String resetHeader,
    boolean stopCacheKeyIncrementWhenOverlimit,
    double nearLimitRatio,
    Duration reloadInterval) {

  /** The settings when no variable is set. */
  public static final EnvoySettings DEFAULTS = fromEnvironment(Map.of());

  /** Creates settings. */
  public EnvoySettings {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(defaultAlgorithm, "defaultAlgorithm");
    Objects.requireNonNull(limitHeader, "limitHeader");
    Objects.requireNonNull(remainingHeader, "remainingHeader");
    Objects.requireNonNull(resetHeader, "resetHeader");
    Objects.requireNonNull(reloadInterval, "reloadInterval");
  }

  /**
   * Reads the settings from {@code env}; a bad value throws {@link IllegalArgumentException} naming the
   * variable, the value and what is allowed.
   */
  public static EnvoySettings fromEnvironment(Map<String, String> env) {
    Optional<Path> config =
        Optional.ofNullable(env.get("WEIR_ENVOY_CONFIG")).filter(s -> !s.isBlank()).map(Path::of);
    return new EnvoySettings(
        config,
        bool(env, "WEIR_ENVOY_MERGE_DOMAIN_CONFIG", false),
        algorithm(env, "WEIR_ENVOY_DEFAULT_ALGORITHM"),
        bool(env, "WEIR_ENVOY_SHADOW_MODE", false),
        bool(env, "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", false),
        header(env, "WEIR_ENVOY_LIMIT_LIMIT_HEADER", "RateLimit-Limit"),
        header(env, "WEIR_ENVOY_LIMIT_REMAINING_HEADER", "RateLimit-Remaining"),
        header(env, "WEIR_ENVOY_LIMIT_RESET_HEADER", "RateLimit-Reset"),
        bool(env, "WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", false),
        ratio(env, "WEIR_ENVOY_NEAR_LIMIT_RATIO", 0.8),
        duration(env, "WEIR_ENVOY_CONFIG_RELOAD_INTERVAL", Duration.ofSeconds(1)));
  }

  /** Returns the options descriptor files are compiled with. */
  public ConfigLoadOptions loadOptions() {
    return new ConfigLoadOptions(mergeDomainConfig, defaultAlgorithm);
  }

  private static Optional<String> value(Map<String, String> env, String name) {
    return Optional.ofNullable(env.get(name)).map(String::strip).filter(s -> !s.isEmpty());
  }

  private static boolean bool(Map<String, String> env, String name, boolean fallback) {
    Optional<String> v = value(env, name);
    if (v.isEmpty()) {
      return fallback;
    }
    return switch (v.get()) {
      case "1", "t", "T", "true", "TRUE", "True" -> true;
      case "0", "f", "F", "false", "FALSE", "False" -> false;
      default -> throw bad(name, v.get(), "true or false");
    };
  }

  private static Algorithm algorithm(Map<String, String> env, String name) {
    Optional<String> v = value(env, name);
    if (v.isEmpty()) {
      return Algorithm.FIXED_WINDOW;
    }
    String upper = v.get().toUpperCase(Locale.ROOT);
    for (Algorithm a : Algorithm.values()) {
      if (a.name().equals(upper)) {
        return a;
      }
    }
    throw bad(name, v.get(), "fixed_window, token_bucket, leaky_bucket or sliding_window");
  }

  private static String header(Map<String, String> env, String name, String fallback) {
    Optional<String> v = value(env, name);
    if (v.isEmpty()) {
      return fallback;
    }
    if (!v.get().chars().allMatch(c -> c > 32 && c < 127 && c != ':')) {
      throw bad(name, v.get(), "an HTTP header name (printable ASCII, no spaces or colons)");
    }
    return v.get();
  }

  private static double ratio(Map<String, String> env, String name, double fallback) {
    Optional<String> v = value(env, name);
    if (v.isEmpty()) {
      return fallback;
    }
    try {
      double d = Double.parseDouble(v.get());
      if (d >= 0 && d <= 1) {
        return d;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw bad(name, v.get(), "a number from 0 to 1");
  }

  private static Duration duration(Map<String, String> env, String name, Duration fallback) {
    Optional<String> v = value(env, name);
    if (v.isEmpty()) {
      return fallback;
    }
    String t = v.get();
    long[] unitsNanos = {1_000L, 1_000_000L, 1_000_000_000L, 60_000_000_000L};
    String[] suffixes = {"us", "ms", "s", "m"};
    for (int i = 0; i < suffixes.length; i++) {
      if (t.endsWith(suffixes[i]) && !(suffixes[i].equals("s") && (t.endsWith("ms") || t.endsWith("us")))) {
        try {
          long n = Long.parseLong(t.substring(0, t.length() - suffixes[i].length()));
          if (n > 0) {
            return Duration.ofNanos(Math.multiplyExact(n, unitsNanos[i]));
          }
        } catch (NumberFormatException | ArithmeticException e) {
          // reported below
        }
      }
    }
    throw bad(name, t, "a positive duration such as 500ms, 1s or 1m");
  }

  private static IllegalArgumentException bad(String name, String value, String allowed) {
    return new IllegalArgumentException(
        name + ": invalid value '" + value + "': allowed values are " + allowed);
  }
}
