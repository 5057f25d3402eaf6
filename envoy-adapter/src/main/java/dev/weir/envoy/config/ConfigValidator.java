package dev.weir.envoy.config;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;

/**
 * The check behind {@code weir.jar validate-config}: checks a descriptor file or directory as a
 * node would load it and reports every error; in strict mode also what loads but is likely a
 * mistake (a key written twice in one map, whose last value is used as envoyproxy/ratelimit uses
 * it), as warnings that fail the check.
 */
public final class ConfigValidator {

  private final ConfigLoadOptions options;
  private final boolean allowNoDomain;
  private final boolean strict;

  /** Creates a validator compiling with {@code options} that refuses a config without a domain. */
  public ConfigValidator(ConfigLoadOptions options) {
    this(options, false);
  }

  /**
   * Creates a validator compiling with {@code options}; {@code allowNoDomain} accepts a config that
   * declares no domain, as {@code WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true} does.
   */
  public ConfigValidator(ConfigLoadOptions options, boolean allowNoDomain) {
    this(options, allowNoDomain, false);
  }

  /**
   * Creates a validator compiling with {@code options}; {@code allowNoDomain} accepts a config that
   * declares no domain, and {@code strict} makes warnings fail the check.
   */
  public ConfigValidator(ConfigLoadOptions options, boolean allowNoDomain, boolean strict) {
    this.options = options;
    this.allowNoDomain = allowNoDomain;
    this.strict = strict;
  }

  /** Returns every error of the file or directory at {@code path}; empty when it loads. */
  public List<String> validate(Path path) {
    return check(path).errors();
  }

  /** Returns every error and warning of the file or directory at {@code path}. */
  public ConfigLoader.Report check(Path path) {
    try {
      ConfigLoader loader = new ConfigLoader(options);
      List<ConfigFile> files = loader.read(path);
      if (files.isEmpty() && !allowNoDomain) {
        return new ConfigLoader.Report(NoDomainLoaded.at(path).errors(), List.of());
      }
      return loader.check(files);
    } catch (DescriptorConfigException e) {
      return new ConfigLoader.Report(e.errors(), List.of());
    }
  }

  /**
   * Validates {@code path}, printing {@code OK <path>} to {@code out} or every error to {@code
   * err} (in strict mode every warning too, each {@code warning: <file>: <text>}), and returns the
   * process exit code: 0 when valid, 1 otherwise (in strict mode also when there is a warning).
   */
  public int run(Path path, PrintStream out, PrintStream err) {
    ConfigLoader.Report report = check(path);
    report.errors().forEach(err::println);
    if (strict) {
      report.warnings().forEach(warning -> err.println("warning: " + warning));
    }
    if (!report.errors().isEmpty() || (strict && !report.warnings().isEmpty())) {
      return 1;
    }
    out.println("OK " + path);
    return 0;
  }
}
