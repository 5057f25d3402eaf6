package dev.weir.core.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Typed access to settings held in environment variables, for every component that adds a setting.
 *
 * <p>A setting is read from its {@code WEIR_*} variable, else from its Gubernator {@code GUBER_*}
 * alias, else it takes its default; a variable set to blank counts as unset (as in Gubernator). A
 * value that cannot be used throws a {@link ConfigException} whose one-line message names the
 * variable that held it, the value and what is allowed.
 */
public final class EnvReader {

  private static final List<String> TRUE_WORDS = List.of("1", "t", "true");
  private static final List<String> FALSE_WORDS = List.of("0", "f", "false");

  /** The form of a whole number, as errors name it: Go's {@code strconv.Atoi} syntax. */
  private static final String INTEGER_FORM = "ASCII digits 0-9, with at most one leading + or -";

  private final Map<String, String> env;

  /** Creates a reader over {@code env} (for example {@code System.getenv()} merged with a file). */
  public EnvReader(Map<String, String> env) {
    this.env = Map.copyOf(env);
  }

  /**
   * A raw value and the variable it was read from.
   *
   * @param variable the variable that held the value ({@code WEIR_*} or its alias)
   * @param value the value, trimmed
   */
  public record Setting(String variable, String value) {}

  /** Returns the value of {@code var}: its {@code WEIR_*} variable, else its alias, else empty. */
  public Optional<Setting> lookup(EnvVar var) {
    Optional<Setting> primary = read(var.name());
    if (primary.isPresent()) {
      return primary;
    }
    return var.aliasName().flatMap(this::read);
  }

  private Optional<Setting> read(String variable) {
    String value = env.get(variable);
    if (value == null || value.isBlank()) {
      return Optional.empty();
    }
    return Optional.of(new Setting(variable, value.trim()));
  }

  /** Returns the variable set for {@code var}: its name or its alias; its name when neither is. */
  public String nameSet(EnvVar var) {
    return lookup(var).map(Setting::variable).orElse(var.name());
  }

  /** Returns {@code var} under the name the environment sets it by (see {@link #nameSet}). */
  public EnvVar asSet(EnvVar var) {
    return var.namedAs(nameSet(var));
  }

  /** Returns the string value of {@code var}, or {@code fallback} when unset. */
  public String string(EnvVar var, String fallback) {
    return lookup(var).map(Setting::value).orElse(fallback);
  }

  /** Returns the file {@code var} names, or empty when unset; whether it exists is not checked. */
  public Optional<Path> path(EnvVar var) {
    return lookup(var).map(setting -> Path.of(setting.value()));
  }

  /** Returns {@code var} as a number within {@code [0, 1]}, or {@code fallback} when unset. */
  public double ratio(EnvVar var, double fallback) {
    Optional<Setting> setting = lookup(var);
    if (setting.isEmpty()) {
      return fallback;
    }
    double number;
    try {
      number = Double.parseDouble(setting.get().value());
    } catch (NumberFormatException e) {
      number = Double.NaN;
    }
    if (!(number >= 0 && number <= 1)) {
      throw invalid(setting.get(), "a number from 0 to 1, such as " + fallback);
    }
    return number;
  }

  /**
   * Returns whether {@code value} reads as a number but for its form: digits other than ASCII
   * ({@code \uff15}) or more than one sign ({@code ++5}), which Java reads and Go does not.
   */
  private static boolean looksLikeNumber(String value) {
    try {
      Long.parseLong(value.replaceFirst("^[+-]+", ""));
      return true;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  /** Returns {@code var} as an int within {@code [min, max]}, or {@code fallback} when unset. */
  public int intInRange(EnvVar var, int fallback, int min, int max) {
    return (int) longInRange(var, fallback, min, max);
  }

  /** Returns {@code var} as a long within {@code [min, max]}, or {@code fallback} when unset. */
  public long longInRange(EnvVar var, long fallback, long min, long max) {
    Optional<Setting> setting = lookup(var);
    if (setting.isEmpty()) {
      return fallback;
    }
    String value = setting.get().value();
    String expected = "a whole number from " + min + " to " + max;
    if (!GoSyntax.isAtoi(value)) {
      throw invalid(
          setting.get(), looksLikeNumber(value) ? expected + " (" + INTEGER_FORM + ")" : expected);
    }
    long number;
    try {
      number = Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw invalid(setting.get(), expected);
    }
    if (number < min || number > max) {
      throw invalid(setting.get(), expected);
    }
    return number;
  }

  /**
   * Returns {@code var} as a boolean, or {@code fallback} when unset. Accepts Go's words: {@code
   * true}/{@code false}, {@code t}/{@code f}, {@code 1}/{@code 0}, in any case.
   */
  public boolean bool(EnvVar var, boolean fallback) {
    Optional<Setting> setting = lookup(var);
    if (setting.isEmpty()) {
      return fallback;
    }
    String word = setting.get().value().toLowerCase(Locale.ROOT);
    if (TRUE_WORDS.contains(word)) {
      return true;
    }
    if (FALSE_WORDS.contains(word)) {
      return false;
    }
    throw invalid(setting.get(), "true or false (also t/f or 1/0)");
  }

  /** Returns {@code var} as a {@code host:port} address, or {@code fallback} when unset. */
  public HostPort hostPort(EnvVar var, HostPort fallback) {
    return hostPort(
        var, fallback, HostPort::parseSetting, "host:port with a port from 0 to 65535");
  }

  /**
   * Returns {@code var} as the {@code host:port} a gRPC channel connects to, or {@code fallback}
   * when unset; an empty host means {@code localhost} and port 0 or a host grpc-java refuses is
   * refused ({@link HostPort#parseLocalGrpcTarget}).
   */
  public HostPort grpcTarget(EnvVar var, HostPort fallback) {
    return hostPort(
        var,
        fallback,
        HostPort::parseLocalGrpcTarget,
        "host:port with a port from 1 to 65535 (an empty host is localhost)");
  }

  /**
   * Returns {@code var} read by {@code parser}, or {@code fallback} when unset; a value it refuses
   * is refused as not {@code allowed}, with an example and the parser's reason.
   */
  private HostPort hostPort(
      EnvVar var, HostPort fallback, Function<String, HostPort> parser, String allowed) {
    Optional<Setting> setting = lookup(var);
    if (setting.isEmpty()) {
      return fallback;
    }
    try {
      return parser.apply(setting.get().value());
    } catch (IllegalArgumentException e) {
      throw invalid(
          setting.get(),
          allowed + ", e.g. localhost:1051 or [::1]:1051 (" + e.getMessage() + ")");
    }
  }

  /**
   * Returns {@code var} as a Go-style duration ({@code 500us}, {@code 100ms}, {@code 5s}, {@code
   * 1h30m}) within {@code [min, max]}, or {@code fallback} when unset.
   */
  public Duration duration(EnvVar var, Duration fallback, Duration min, Duration max) {
    Optional<Setting> setting = lookup(var);
    if (setting.isEmpty()) {
      return fallback;
    }
    String expected =
        "a duration from "
            + GoDurations.format(min)
            + " to "
            + GoDurations.format(max)
            + " such as 500us, 100ms, 5s or 1h30m (units ns, us, \u00b5s, ms, s, m, h"
            + (setting.get().value().chars().anyMatch(c -> GoSyntax.isNonAsciiDigit((char) c))
                ? "; digits ASCII 0-9 only)"
                : ")");
    Duration parsed;
    try {
      parsed = GoDurations.parse(setting.get().value());
    } catch (IllegalArgumentException e) {
      throw invalid(setting.get(), expected);
    }
    if (parsed.compareTo(min) < 0 || parsed.compareTo(max) > 0) {
      throw invalid(setting.get(), expected);
    }
    return parsed;
  }

  /**
   * Returns {@code var} as one of {@code allowed} (compared ignoring case, returned as listed), or
   * {@code fallback} when unset.
   */
  public String oneOf(EnvVar var, String fallback, List<String> allowed) {
    Optional<Setting> setting = lookup(var);
    if (setting.isEmpty()) {
      return fallback;
    }
    for (String choice : allowed) {
      if (choice.equalsIgnoreCase(setting.get().value())) {
        return choice;
      }
    }
    throw invalid(setting.get(), "one of " + String.join(", ", new ArrayList<>(allowed)));
  }

  private static ConfigException invalid(Setting setting, String expected) {
    String oneLine = setting.value().replace("\r", "\\r").replace("\n", "\\n");
    return ConfigException.invalid(setting.variable(), oneLine, expected);
  }
}
