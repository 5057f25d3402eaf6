package dev.weir.envoy.config;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The configuration requests are answered with, swapped whole on each successful reload, and the
 * listeners told after each swap.
 */
public final class ConfigHolder {

  private static final Logger LOG = LoggerFactory.getLogger(ConfigHolder.class);

  private final AtomicReference<EnvoyConfig> current = new AtomicReference<>();
  private final List<Runnable> listeners = new CopyOnWriteArrayList<>();

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

  /**
   * Replaces the current configuration, then runs every listener. A listener that throws (an
   * {@link Error} too) is logged and the others still run: the configuration is in place either
   * way, so the load succeeded, and its caller must not take it for a refused one.
   */
  public void set(EnvoyConfig config) {
    current.set(config);
    for (Runnable listener : listeners) {
      try {
        listener.run();
      } catch (RuntimeException | Error e) {
        LOG.warn("A listener of the rate limit configuration failed on the new configuration", e);
      }
    }
  }

  /** Runs {@code listener} after each {@link #set}, on the thread that set the configuration. */
  public void onChange(Runnable listener) {
    listeners.add(listener);
  }
}
