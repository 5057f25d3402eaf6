package dev.weir.core.discovery;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The discovery settings' view of {@link EnvReader}: a setting is named by its suffix {@code X}, read
 * from {@code WEIR_X} or Gubernator's {@code GUBER_X}, and a bad value is a {@link ConfigException}
 * naming the variable, the value and what is allowed.
 */
public final class DiscoveryEnv {
  private static final Duration LONGEST = Duration.ofDays(365);

  private final EnvReader reader;

  /** Creates a reader over {@code env} (usually {@link System#getenv()}). */
  public DiscoveryEnv(Map<String, String> env) {
    this.reader = new EnvReader(env);
  }

  /** Returns the variable for {@code suffix}: {@code WEIR_<suffix>} with alias {@code GUBER_<suffix>}. */
  public static EnvVar var(String suffix) {
    return EnvVar.of("WEIR_" + suffix, "GUBER_" + suffix);
  }

  /** Returns the value of {@code WEIR_<suffix>} or its alias, if set and not blank. */
  public Optional<String> raw(String suffix) {
    return reader.lookup(var(suffix)).map(EnvReader.Setting::value);
  }

  /** Returns the string setting, or {@code fallback} when unset. */
  public String string(String suffix, String fallback) {
    return reader.string(var(suffix), fallback);
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

  /** Returns the boolean setting (Go's words), or {@code fallback} when unset. */
  public boolean bool(String suffix, boolean fallback) {
    return reader.bool(var(suffix), fallback);
  }

  /** Returns the port setting (1..65535), or {@code fallback} when unset. */
  public int port(String suffix, int fallback) {
    return reader.intInRange(var(suffix), fallback, 1, 65535);
  }

  /** Returns the Go-style duration setting, at least {@code min}, or {@code fallback} when unset. */
  public Duration duration(String suffix, Duration fallback, Duration min) {
    return reader.duration(var(suffix), fallback, min, LONGEST);
  }

  /** Returns the one-of setting as listed in {@code allowed}, or {@code fallback} when unset. */
  public String oneOf(String suffix, String fallback, List<String> allowed) {
    return reader.oneOf(var(suffix), fallback, allowed);
  }

  /** Returns the error for a bad value of {@code suffix}, naming the variable, the value and what is allowed. */
  public ConfigException invalid(String suffix, String value, String allowed) {
    return ConfigException.invalid(name(suffix), value, allowed);
  }

  /** Returns the name of the variable set for {@code suffix}, or {@code WEIR_<suffix>} when none is. */
  public String name(String suffix) {
    return reader.lookup(var(suffix)).map(EnvReader.Setting::variable).orElse("WEIR_" + suffix);
  }
}
