package dev.weir.envoy.config;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The configuration requests are answered with, swapped whole on each successful reload, and the
 * listeners told after each swap.
 */
public final class ConfigHolder {

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

  /** Replaces the current configuration, then runs every listener. */
  public void set(EnvoyConfig config) {
    current.set(config);
    for (Runnable listener : listeners) {
      listener.run();
    }
  }

  /** Runs {@code listener} after each {@link #set}, on the thread that set the configuration. */
  public void onChange(Runnable listener) {
    listeners.add(listener);
  }
}
