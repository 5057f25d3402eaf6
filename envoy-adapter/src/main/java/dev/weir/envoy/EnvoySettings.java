package dev.weir.envoy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.model.Algorithm;
import dev.weir.envoy.config.ConfigLimits;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.NoDomainLoaded;
import dev.weir.envoy.xds.XdsSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * The Envoy adapter's settings, read from {@code WEIR_ENVOY_*} environment variables; each
 * envoyproxy/ratelimit setting that changes decisions or responses keeps its own name after the
 * prefix.
 *
 * @param source where the descriptor config comes from: the files at {@code config}, or an xDS
 *     management server
 * @param config the descriptor file or directory of the {@code FILE} source; empty (with that
 *     source) disables the adapter
 * @param xds how the {@code XDS} source reaches its server
 * @param mergeDomainConfig whether several files may declare the same domain
 * @param mergeVariable the name of the variable that sets {@code mergeDomainConfig}, as the node's
 *     mode reads it, for the refusal of a domain declared twice
 * @param defaultAlgorithm the algorithm of rules that name none
 * @param shadowMode whether an OVER_LIMIT overall answer is turned into OK
 * @param responseHeadersEnabled whether the RateLimit-* response headers are added
 * @param limitHeader the name of the limit header
 * @param remainingHeader the name of the remaining header
 * @param resetHeader the name of the reset header
 * @param headersFormat which RateLimit headers are added when they are enabled
 * @param stopCacheKeyIncrementWhenOverlimit whether a request answered OVER_LIMIT leaves its
 *     counters that are not over untouched
 * @param nearLimitRatio the fraction of a limit above which hits count as near the limit
 * @param reloadInterval how often the config path is checked for changes
 * @param forceStartWithoutInitialConfig whether a node starts when the config declares no domain
 *     (it then reports not ready until one loads)
 * @param configLimits the largest config file and the most bytes of all files together
 * @param quotaMode whether every rule is a soft quota, as with {@code quota_mode: true} on each
 * @param responseDynamicMetadata whether responses carry dynamic metadata (the request's
 *     descriptors and the passing rules' {@code metadata})
 * @param variables the names of the config path's and the force-start settings, as the node's
 *     mode reads them, for the refusal of a config without a domain
 * @param configKeyPrefix the prefix of the runtime keys of the files read below the config
 *     directory (see {@link dev.weir.envoy.config.ConfigFiles}); empty reads every file
 */
public record EnvoySettings(
    Source source,
    Optional<Path> config,
    XdsSettings xds,
    boolean mergeDomainConfig,
    String mergeVariable,
    Algorithm defaultAlgorithm,
    boolean shadowMode,
    boolean responseHeadersEnabled,
    String limitHeader,
    String remainingHeader,
    String resetHeader,
    HeadersFormat headersFormat,
    boolean stopCacheKeyIncrementWhenOverlimit,
    double nearLimitRatio,
    Duration reloadInterval,
    boolean forceStartWithoutInitialConfig,
    ConfigLimits configLimits,
    boolean quotaMode,
    boolean responseDynamicMetadata,
    NoDomainLoaded.Variables variables,
    String configKeyPrefix) {

  /** Where the descriptor config comes from. */
  public enum Source {
    /** A descriptor file or directory, polled for changes. */
    FILE,
    /** An xDS management server, over an ADS state-of-the-world stream. */
    XDS
  }

  /** The set of RateLimit response headers added when they are enabled. */
  public enum HeadersFormat {
    /**
     * {@code RateLimit-Limit}, {@code RateLimit-Remaining} and {@code RateLimit-Reset} (names
     * configurable), as envoyproxy/ratelimit adds them.
     */
    TRIO,
    /**
     * The structured fields {@code RateLimit-Policy} and {@code RateLimit} of
     * draft-ietf-httpapi-ratelimit-headers-10.
     */
    IETF
  }

  /** Creates settings. */
  public EnvoySettings {
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(xds, "xds");
    Objects.requireNonNull(mergeVariable, "mergeVariable");
    Objects.requireNonNull(defaultAlgorithm, "defaultAlgorithm");
    Objects.requireNonNull(limitHeader, "limitHeader");
    Objects.requireNonNull(remainingHeader, "remainingHeader");
    Objects.requireNonNull(resetHeader, "resetHeader");
    Objects.requireNonNull(headersFormat, "headersFormat");
    Objects.requireNonNull(reloadInterval, "reloadInterval");
    Objects.requireNonNull(configLimits, "configLimits");
    Objects.requireNonNull(variables, "variables");
    Objects.requireNonNull(configKeyPrefix, "configKeyPrefix");
  }

  /** {@code WEIR_ENVOY_CONFIG}. */
  public static final EnvVar CONFIG = EnvVar.of("WEIR_ENVOY_CONFIG");

  /** {@code WEIR_ENVOY_CONFIG_SOURCE}: {@code file} (default) or {@code xds}. */
  public static final EnvVar CONFIG_SOURCE = EnvVar.of("WEIR_ENVOY_CONFIG_SOURCE");

  /** {@code WEIR_ENVOY_QUOTA_MODE}. */
  public static final EnvVar QUOTA_MODE = EnvVar.of("WEIR_ENVOY_QUOTA_MODE");

  /** {@code WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA}. */
  public static final EnvVar RESPONSE_DYNAMIC_METADATA =
      EnvVar.of("WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA");

  /** {@code WEIR_ENVOY_MERGE_DOMAIN_CONFIG}. */
  public static final EnvVar MERGE_DOMAIN_CONFIG = EnvVar.of(ConfigLoadOptions.MERGE_VARIABLE);

  /** {@code WEIR_ENVOY_DEFAULT_ALGORITHM}. */
  public static final EnvVar DEFAULT_ALGORITHM = EnvVar.of("WEIR_ENVOY_DEFAULT_ALGORITHM");

  /** {@code WEIR_ENVOY_SHADOW_MODE}. */
  public static final EnvVar SHADOW_MODE = EnvVar.of("WEIR_ENVOY_SHADOW_MODE");

  /** {@code WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED}. */
  public static final EnvVar LIMIT_RESPONSE_HEADERS_ENABLED =
      EnvVar.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED");

  /** {@code WEIR_ENVOY_LIMIT_LIMIT_HEADER}. */
  public static final EnvVar LIMIT_LIMIT_HEADER = EnvVar.of("WEIR_ENVOY_LIMIT_LIMIT_HEADER");

  /** {@code WEIR_ENVOY_LIMIT_REMAINING_HEADER}. */
  public static final EnvVar LIMIT_REMAINING_HEADER =
      EnvVar.of("WEIR_ENVOY_LIMIT_REMAINING_HEADER");

  /** {@code WEIR_ENVOY_LIMIT_RESET_HEADER}. */
  public static final EnvVar LIMIT_RESET_HEADER = EnvVar.of("WEIR_ENVOY_LIMIT_RESET_HEADER");

  /** {@code WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_FORMAT}: {@code trio} (default) or {@code ietf}. */
  public static final EnvVar LIMIT_RESPONSE_HEADERS_FORMAT =
      EnvVar.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_FORMAT");

  /** {@code WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT}. */
  public static final EnvVar STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT =
      EnvVar.of("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT");

  /** {@code WEIR_ENVOY_NEAR_LIMIT_RATIO}. */
  public static final EnvVar NEAR_LIMIT_RATIO = EnvVar.of("WEIR_ENVOY_NEAR_LIMIT_RATIO");

  /** {@code WEIR_ENVOY_CONFIG_RELOAD_INTERVAL}. */
  public static final EnvVar CONFIG_RELOAD_INTERVAL =
      EnvVar.of("WEIR_ENVOY_CONFIG_RELOAD_INTERVAL");

  /** {@code WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG}. */
  public static final EnvVar FORCE_START_WITHOUT_INITIAL_CONFIG =
      EnvVar.of(NoDomainLoaded.FORCE_START);

  /** {@code WEIR_ENVOY_CONFIG_MAX_FILE_SIZE}. */
  public static final EnvVar CONFIG_MAX_FILE_SIZE = EnvVar.of("WEIR_ENVOY_CONFIG_MAX_FILE_SIZE");

  /** {@code WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE}. */
  public static final EnvVar CONFIG_MAX_TOTAL_SIZE = EnvVar.of("WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE");

  private static final int MIN_CONFIG_BYTES = 1024;
  private static final int MAX_CONFIG_FILE_BYTES = 16 * 1024 * 1024;
  private static final long MAX_CONFIG_TOTAL_BYTES = 256L * 1024 * 1024;

  private static final List<String> ALGORITHMS =
      List.of("fixed_window", "token_bucket", "leaky_bucket", "sliding_window");

  private static final List<String> HEADER_FORMATS = List.of("trio", "ietf");

  /** The settings when no variable is set. */
  public static final EnvoySettings DEFAULTS = fromEnvironment(Map.of());

  /**
   * Reads the settings from {@code env}; a bad value throws {@link ConfigException} naming the
   * variable, the value and what is allowed.
   */
  public static EnvoySettings fromEnvironment(Map<String, String> env) {
    return from(new EnvReader(env));
  }

  /** Reads the settings through {@code reader}; a bad value throws {@link ConfigException}. */
  public static EnvoySettings from(EnvReader reader) {
    return from(reader, UnaryOperator.identity());
  }

  /**
   * Reads the settings through {@code reader}, each variable under the name {@code names} gives it
   * (envoyproxy/ratelimit's names in its compatibility mode); a bad value throws {@link
   * ConfigException} naming the variable as set.
   */
  public static EnvoySettings from(EnvReader reader, UnaryOperator<EnvVar> names) {
    Optional<Path> config = reader.path(names.apply(CONFIG));
    String source =
        reader.oneOf(names.apply(CONFIG_SOURCE), "file", List.of("file", "xds", "GRPC_XDS_SOTW"));
    return new EnvoySettings(
        source.equals("file") ? Source.FILE : Source.XDS,
        config,
        XdsSettings.from(reader, names),
        reader.bool(names.apply(MERGE_DOMAIN_CONFIG), false),
        names.apply(MERGE_DOMAIN_CONFIG).name(),
        Algorithm.valueOf(
            reader
                .oneOf(names.apply(DEFAULT_ALGORITHM), "fixed_window", ALGORITHMS)
                .toUpperCase(Locale.ROOT)),
        reader.bool(names.apply(SHADOW_MODE), false),
        reader.bool(names.apply(LIMIT_RESPONSE_HEADERS_ENABLED), false),
        header(reader, names.apply(LIMIT_LIMIT_HEADER), "RateLimit-Limit"),
        header(reader, names.apply(LIMIT_REMAINING_HEADER), "RateLimit-Remaining"),
        header(reader, names.apply(LIMIT_RESET_HEADER), "RateLimit-Reset"),
        HeadersFormat.valueOf(
            reader
                .oneOf(names.apply(LIMIT_RESPONSE_HEADERS_FORMAT), "trio", HEADER_FORMATS)
                .toUpperCase(Locale.ROOT)),
        reader.bool(names.apply(STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT), false),
        reader.ratio(names.apply(NEAR_LIMIT_RATIO), 0.8),
        reader.duration(
            names.apply(CONFIG_RELOAD_INTERVAL),
            Duration.ofSeconds(1),
            Duration.ofMillis(10),
            Duration.ofHours(1)),
        reader.bool(names.apply(FORCE_START_WITHOUT_INITIAL_CONFIG), false),
        new ConfigLimits(
            reader.intInRange(
                names.apply(CONFIG_MAX_FILE_SIZE),
                ConfigLimits.DEFAULT_MAX_FILE_BYTES,
                MIN_CONFIG_BYTES,
                MAX_CONFIG_FILE_BYTES),
            reader.longInRange(
                names.apply(CONFIG_MAX_TOTAL_SIZE),
                ConfigLimits.DEFAULT_MAX_TOTAL_BYTES,
                MIN_CONFIG_BYTES,
                MAX_CONFIG_TOTAL_BYTES)),
        reader.bool(names.apply(QUOTA_MODE), false),
        reader.bool(names.apply(RESPONSE_DYNAMIC_METADATA), false),
        new NoDomainLoaded.Variables(
            names.apply(CONFIG).name(), names.apply(FORCE_START_WITHOUT_INITIAL_CONFIG).name()),
        "");
  }

  /**
   * Returns whether the adapter runs: with the {@code XDS} source, or with the {@code FILE}
   * source and a config path.
   */
  public boolean enabled() {
    return source == Source.XDS || config.isPresent();
  }

  /** Returns these settings with the {@code FILE} source reading {@code path}. */
  public EnvoySettings withConfig(Path path) {
    return withConfig(path, variables.config());
  }

  /**
   * Returns these settings with the {@code FILE} source reading {@code path}, which the settings
   * named {@code pathVariables} gave.
   */
  public EnvoySettings withConfig(Path path, String pathVariables) {
    return withConfig(path, pathVariables, "", "");
  }

  /**
   * Returns these settings with the {@code FILE} source reading, below the directory {@code path}
   * that the settings named {@code pathVariables} gave, the files whose runtime key starts with
   * {@code keyPrefix} (every file when it is empty), which {@code keyPrefixVariables} tells the
   * origin of in a refusal (empty when no setting gives it).
   */
  public EnvoySettings withConfig(
      Path path, String pathVariables, String keyPrefix, String keyPrefixVariables) {
    return new EnvoySettings(
        Source.FILE,
        Optional.of(path),
        xds,
        mergeDomainConfig,
        mergeVariable,
        defaultAlgorithm,
        shadowMode,
        responseHeadersEnabled,
        limitHeader,
        remainingHeader,
        resetHeader,
        headersFormat,
        stopCacheKeyIncrementWhenOverlimit,
        nearLimitRatio,
        reloadInterval,
        forceStartWithoutInitialConfig,
        configLimits,
        quotaMode,
        responseDynamicMetadata,
        new NoDomainLoaded.Variables(pathVariables, variables.forceStart(), keyPrefixVariables),
        keyPrefix);
  }

  /** Returns the options descriptor files are compiled with. */
  public ConfigLoadOptions loadOptions() {
    return new ConfigLoadOptions(
        mergeDomainConfig, defaultAlgorithm, configLimits, configKeyPrefix, mergeVariable);
  }

  private static String header(EnvReader reader, EnvVar var, String fallback) {
    Optional<EnvReader.Setting> setting = reader.lookup(var);
    if (setting.isEmpty()) {
      return fallback;
    }
    String v = setting.get().value();
    if (v.isEmpty() || !v.chars().allMatch(EnvoySettings::isTokenChar)) {
      throw invalid(
          setting.get(),
          "an HTTP header name: one or more letters, digits or " + TOKEN_SYMBOLS);
    }
    return v;
  }

  /** The characters other than letters and digits an HTTP token (a header name) may hold. */
  private static final String TOKEN_SYMBOLS = "!#$%&'*+-.^_`|~";

  /** Returns whether {@code c} may appear in an HTTP token (RFC 9110, section 5.6.2). */
  private static boolean isTokenChar(int c) {
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')
        || TOKEN_SYMBOLS.indexOf(c) >= 0;
  }

  private static ConfigException invalid(EnvReader.Setting setting, String expected) {
    return ConfigException.invalid(setting.variable(), setting.value(), expected);
  }
}
