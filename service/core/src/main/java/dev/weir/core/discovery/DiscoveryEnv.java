package dev.weir.core.discovery;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A reader of discovery settings from environment variables, where each {@code WEIR_X} variable also
 * accepts Gubernator's {@code GUBER_X} name (the {@code WEIR_} name wins when both are set).
 *
 * <p>Every parse failure is an {@link IllegalArgumentException} whose one-line message names the
 * variable, the value and what is allowed.
 */
public final class DiscoveryEnv {
  private static final Pattern DURATION_PART =
      Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|µs|ms|s|m|h)");

  private final Map<String, String> env;

  /** Creates a reader over {@code env} (usually {@link System#getenv()}). */
  public DiscoveryEnv(Map<String, String> env) {
    this.env = Map.copyOf(env);
  }

  /** Returns the value of {@code WEIR_<suffix>} or its {@code GUBER_<suffix>} alias, if set and not blank. */
  public Optional<String> raw(String suffix) {
    for (String name : List.of("WEIR_" + suffix, "GUBER_" + suffix)) {
      String value = env.get(name);
      if (value != null && !value.isBlank()) {
        return Optional.of(value.trim());
      }
    }
    return Optional.empty();
  }

  /** Returns the name under which {@code suffix} was set ({@code WEIR_} preferred) for error messages. */
  public String nameOf(String suffix) {
    String weir = "WEIR_" + suffix;
    String guber = "GUBER_" + suffix;
    String weirValue = env.get(weir);
    if ((weirValue == null || weirValue.isBlank()) && env.get(guber) != null) {
      return guber;
    }
    return weir;
  }

  /** Returns the string setting, or {@code fallback} when unset. */
  public String string(String suffix, String fallback) {
    return raw(suffix).orElse(fallback);
  }

  /** Returns the comma-separated list setting (blank items dropped), or {@code fallback} when unset. */
  public List<String> list(String suffix, List<String> fallback) {
    Optional<String> value = raw(suffix);
    if (value.isEmpty()) {
      return fallback;
    }
    List<String> items = new ArrayList<>();
    for (String item : value.get().split(",")) {
      if (!item.isBlank()) {
        items.add(item.trim());
      }
    }
    return List.copyOf(items);
  }

  /** Returns the boolean setting ({@code true|false}, any case), or {@code fallback} when unset. */
  public boolean bool(String suffix, boolean fallback) {
    Optional<String> value = raw(suffix);
    if (value.isEmpty()) {
      return fallback;
    }
    return switch (value.get().toLowerCase(Locale.ROOT)) {
      case "true", "1", "yes" -> true;
      case "false", "0", "no" -> false;
      default -> throw invalid(suffix, value.get(), "true or false");
    };
  }

  /** Returns the port setting (1..65535), or {@code fallback} when unset. */
  public int port(String suffix, int fallback) {
    Optional<String> value = raw(suffix);
    if (value.isEmpty()) {
      return fallback;
    }
    try {
      int port = Integer.parseInt(value.get());
      if (port >= 1 && port <= 65535) {
        return port;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw invalid(suffix, value.get(), "a port number from 1 to 65535");
  }

  /** Returns the positive Go-style duration setting ({@code 500ms}, {@code 5s}, {@code 1m30s}), or {@code fallback}. */
  public Duration duration(String suffix, Duration fallback) {
    Optional<String> value = raw(suffix);
    if (value.isEmpty()) {
      return fallback;
    }
    Duration parsed = parseDuration(value.get());
    if (parsed == null || parsed.isZero() || parsed.isNegative()) {
      throw invalid(suffix, value.get(), "a positive duration such as 500ms, 5s or 1m30s");
    }
    return parsed;
  }

  /** Returns the one-of setting, lower-cased, or {@code fallback} when unset. */
  public String oneOf(String suffix, String fallback, List<String> allowed) {
    String value = raw(suffix).map(v -> v.toLowerCase(Locale.ROOT)).orElse(fallback);
    if (!allowed.contains(value)) {
      throw invalid(suffix, value, "one of " + String.join(", ", allowed));
    }
    return value;
  }

  /** Returns the error for a bad value of {@code suffix}, naming the variable, the value and what is allowed. */
  public IllegalArgumentException invalid(String suffix, String value, String allowed) {
    return new IllegalArgumentException(
        nameOf(suffix) + "='" + value + "' is invalid: expected " + allowed);
  }

  private static Duration parseDuration(String text) {
    Matcher m = DURATION_PART.matcher(text);
    int at = 0;
    long nanos = 0;
    while (at < text.length() && m.find(at) && m.start() == at) {
      double amount = Double.parseDouble(m.group(1));
      long unitNanos =
          switch (m.group(2)) {
            case "ns" -> 1L;
            case "us", "µs" -> 1_000L;
            case "ms" -> 1_000_000L;
            case "s" -> 1_000_000_000L;
            case "m" -> 60_000_000_000L;
            default -> 3_600_000_000_000L;
          };
      nanos += (long) (amount * unitNanos);
      at = m.end();
    }
    return at == text.length() && at > 0 ? Duration.ofNanos(nanos) : null;
  }
}
