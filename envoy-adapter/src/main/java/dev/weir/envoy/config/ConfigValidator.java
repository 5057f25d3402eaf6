package dev.weir.envoy.config;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;

/**
 * The {@code validate-config} command: checks a descriptor file or directory as a node would load
 * it and reports every error.
 */
public final class ConfigValidator {

  private final ConfigLoadOptions options;
  private final boolean allowNoDomain;

  /** Creates a validator compiling with {@code options} that refuses a config without a domain. */
  public ConfigValidator(ConfigLoadOptions options) {
    this(options, false);
  }

  /**
   * Creates a validator compiling with {@code options}; {@code allowNoDomain} accepts a config that
   * declares no domain, as {@code WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true} does.
   */
  public ConfigValidator(ConfigLoadOptions options, boolean allowNoDomain) {
    this.options = options;
    this.allowNoDomain = allowNoDomain;
  }

  /** Returns every error of the file or directory at {@code path}; empty when it loads. */
  public List<String> validate(Path path) {
    try {
      ConfigLoader loader = new ConfigLoader(options);
      List<ConfigFile> files = loader.read(path);
      if (files.isEmpty() && !allowNoDomain) {
        return NoDomainLoaded.at(path).errors();
      }
      return loader.errors(files);
    } catch (ConfigException e) {
      return e.errors();
    }
  }

  /**
   * Validates {@code path}, printing {@code OK <path>} to {@code out} or every error to {@code
   * err}, and returns the process exit code: 0 when valid, 1 otherwise.
   */
  public int run(Path path, PrintStream out, PrintStream err) {
    List<String> errors = validate(path);
    if (errors.isEmpty()) {
      out.println("OK " + path);
      return 0;
    }
    errors.forEach(err::println);
    return 1;
  }

  /**
   * Validates the path given as the only argument with the options of the environment ({@code
   * WEIR_ENVOY_*}) and exits with {@link #run}'s code; 2 on a usage error.
   */
  public static void main(String[] args) {
    if (args.length != 1) {
      System.err.println("usage: validate-config PATH");
      System.exit(2);
    }
    dev.weir.envoy.EnvoySettings settings;
    try {
      settings = dev.weir.envoy.EnvoySettings.fromEnvironment(System.getenv());
    } catch (dev.weir.core.config.ConfigException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    System.exit(
        new ConfigValidator(settings.loadOptions(), settings.forceStartWithoutInitialConfig())
            .run(Path.of(args[0]), System.out, System.err));
  }
}
