package dev.weir.envoy.config;

import java.util.Map;
import java.util.Optional;

/**
 * An immutable, compiled descriptor configuration: every loaded domain by name.
 *
 * @param domains the domains by name
 */
public record EnvoyConfig(Map<String, DomainConfig> domains) {

  /** Creates a config, copying {@code domains}. */
  public EnvoyConfig {
    domains = Map.copyOf(domains);
  }

  /** Returns the domain named {@code name}, or empty when no file declares it. */
  public Optional<DomainConfig> domain(String name) {
    return Optional.ofNullable(domains.get(name));
  }
}
