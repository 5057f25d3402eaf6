package dev.weir.envoy.config;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/** The configuration requests are answered with, swapped whole on each successful reload. */
public final class ConfigHolder {

  private final AtomicReference<EnvoyConfig> current = new AtomicReference<>();

  /** Creates a holder with no configuration loaded. */
  public ConfigHolder() {}

  /** Creates a holder holding {@code config}. */
  public ConfigHolder(EnvoyConfig config) {
    current.set(config);
  }

  /** Returns the current configuration, or empty when none has loaded. */
  public Optional<EnvoyConfig> current() {
    return Optional.ofNullable(current.get());
  }

  /** Replaces the current configuration. */
  public void set(EnvoyConfig config) {
    current.set(config);
  }
}
