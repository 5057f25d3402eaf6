package dev.weir.envoy.config;

import dev.weir.core.model.Algorithm;
import java.util.Objects;

/**
 * How descriptor files are compiled.
 *
 * @param mergeDomainConfig whether several files may declare the same domain (their top-level rules
 *     are merged)
 * @param defaultAlgorithm the algorithm of a rule that names none
 */
public record ConfigLoadOptions(boolean mergeDomainConfig, Algorithm defaultAlgorithm) {

  /** Envoyproxy/ratelimit's behavior: no merging, fixed windows. */
  public static final ConfigLoadOptions DEFAULTS =
      new ConfigLoadOptions(false, Algorithm.FIXED_WINDOW);

  /** Creates options. */
  public ConfigLoadOptions {
    Objects.requireNonNull(defaultAlgorithm, "defaultAlgorithm");
  }
}
