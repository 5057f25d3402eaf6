package dev.weir.envoy.config;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;

/**
 * The {@code validate-config} command: checks a descriptor file or directory and reports every
 * error.
 */
public final class ConfigValidator {

  private final ConfigLoadOptions options;

  /** Creates a validator compiling with {@code options}. */
  public ConfigValidator(ConfigLoadOptions options) {
    this.options = options;
  }

  /** Returns every error of the file or directory at {@code path}; empty when it loads. */
  public List<String> validate(Path path) {
    try {
      return new ConfigLoader(options).errors(ConfigFiles.read(path));
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
   * Validates the path given as the only argument with the default options ({@code
   * WEIR_ENVOY_MERGE_DOMAIN_CONFIG} and {@code WEIR_ENVOY_DEFAULT_ALGORITHM} from the environment)
   * and exits with {@link #run}'s code; 2 on a usage error.
   */
  public static void main(String[] args) {
    if (args.length != 1) {
      System.err.println("usage: validate-config PATH");
      System.exit(2);
    }
    ConfigLoadOptions options;
    try {
      options = dev.weir.envoy.EnvoySettings.fromEnvironment(System.getenv()).loadOptions();
    } catch (dev.weir.core.config.ConfigException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    System.exit(new ConfigValidator(options).run(Path.of(args[0]), System.out, System.err));
  }
}
