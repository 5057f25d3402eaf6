package dev.weir.server;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigValidator;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * {@code validate-config [--strict] PATH}: checks an Envoy descriptor file or directory as the
 * server would load it ({@code WEIR_ENVOY_MERGE_DOMAIN_CONFIG}, {@code WEIR_ENVOY_DEFAULT_ALGORITHM},
 * the {@code WEIR_ENVOY_CONFIG_MAX_*} limits and {@code WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG}
 * apply) and exits 0, or 1 after printing every error, or 2 on a usage error. {@code --strict} also
 * prints what loads but is likely a mistake (a key written twice in one map) as warnings, and exits
 * 1 when there is any. A PATH that starts with {@code -} is taken for an option forgotten or
 * misspelt (write {@code ./-name} for such a file).
 */
final class ValidateConfigCommand implements Command {

  /** The usage line, printed first by {@code --help} and alone on a usage error. */
  static final String USAGE = "usage: java -jar weir.jar validate-config [--strict] PATH";

  /** What {@code validate-config --help} prints. */
  static final String HELP =
      USAGE
          + """


          Checks an Envoy descriptor YAML file, or every file of a folder, as a node with
          WEIR_ENVOY_CONFIG=PATH would load it; WEIR_ENVOY_MERGE_DOMAIN_CONFIG,
          WEIR_ENVOY_DEFAULT_ALGORITHM, WEIR_ENVOY_CONFIG_MAX_FILE_SIZE,
          WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE and WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG apply.

          --strict  also print what loads but is likely a mistake (a key written twice in one
                    map, more than one YAML document in a file) as warnings, and fail on them.

          Exit status: 0 when it loads, 1 when it does not (every error printed on stderr with its
          file) or, with --strict, when there is a warning, 2 for a usage error or a bad setting.""";

  @Override
  public String summary() {
    return "check an Envoy descriptor config file or folder";
  }

  @Override
  public String usage() {
    return USAGE;
  }

  @Override
  public String help() {
    return HELP;
  }

  @Override
  public int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err) {
    boolean strict = args.size() == 2 && args.get(0).equals("--strict");
    String path = args.isEmpty() ? null : args.get(args.size() - 1);
    if ((args.size() != 1 && !strict) || path.startsWith("-")) {
      err.println(USAGE);
      return 2;
    }
    EnvoySettings settings;
    try {
      settings = EnvoySettings.from(new EnvReader(env));
    } catch (ConfigException e) {
      err.println(e.getMessage());
      return 2;
    }
    return new ConfigValidator(
            settings.loadOptions(), settings.forceStartWithoutInitialConfig(), strict)
        .run(Path.of(path), out, err);
  }
}
