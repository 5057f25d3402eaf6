package dev.weir.envoy.config;

import dev.weir.core.model.Algorithm;
import java.util.Objects;

/**
 * How descriptor files are read and compiled.
 *
 * @param mergeDomainConfig whether several files may declare the same domain (their top-level rules
 *     are merged)
 * @param defaultAlgorithm the algorithm of a rule that names none
 * @param limits the most the files may hold
 * @param keyPrefix the prefix of the runtime keys of the files read below a directory (see {@link
 *     ConfigFiles}); empty reads every file
 * @param mergeVariable the name of the variable that turns on {@code mergeDomainConfig}, as the
 *     node's mode reads it, for the refusal of a domain declared twice
 */
public record ConfigLoadOptions(
    boolean mergeDomainConfig,
    Algorithm defaultAlgorithm,
    ConfigLimits limits,
    String keyPrefix,
    String mergeVariable) {

  /** The variable of {@code weir.jar serve} that turns on {@code mergeDomainConfig}. */
  public static final String MERGE_VARIABLE = "WEIR_ENVOY_MERGE_DOMAIN_CONFIG";

  /** Envoyproxy/ratelimit's behavior: no merging, fixed windows; default limits. */
  public static final ConfigLoadOptions DEFAULTS =
      new ConfigLoadOptions(false, Algorithm.FIXED_WINDOW);

  /** Creates options. */
  public ConfigLoadOptions {
    Objects.requireNonNull(defaultAlgorithm, "defaultAlgorithm");
    Objects.requireNonNull(limits, "limits");
    Objects.requireNonNull(keyPrefix, "keyPrefix");
    Objects.requireNonNull(mergeVariable, "mergeVariable");
  }

  /** Creates options naming the {@code WEIR_*} merge variable, {@link #MERGE_VARIABLE}. */
  public ConfigLoadOptions(
      boolean mergeDomainConfig,
      Algorithm defaultAlgorithm,
      ConfigLimits limits,
      String keyPrefix) {
    this(
        mergeDomainConfig,
        defaultAlgorithm,
        limits,
        keyPrefix,
        MERGE_VARIABLE);
  }

  /** Creates options reading every file. */
  public ConfigLoadOptions(
      boolean mergeDomainConfig, Algorithm defaultAlgorithm, ConfigLimits limits) {
    this(mergeDomainConfig, defaultAlgorithm, limits, "");
  }

  /** Creates options with the default limits. */
  public ConfigLoadOptions(boolean mergeDomainConfig, Algorithm defaultAlgorithm) {
    this(mergeDomainConfig, defaultAlgorithm, ConfigLimits.DEFAULTS);
  }
}
