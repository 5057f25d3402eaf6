package dev.weir.server;

import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The entry point of {@code weir.jar}: {@code java -jar weir.jar [SUBCOMMAND] [ARGS]}. Without a
 * subcommand it serves ({@code serve [--config FILE]}); settings come from the environment.
 */
public final class Main {

  /** The subcommands by name; the first is the default. Add new ones here. */
  static final Map<String, Command> COMMANDS = commands();

  private Main() {}

  private static Map<String, Command> commands() {
    Map<String, Command> commands = new LinkedHashMap<>();
    commands.put("serve", new ServeCommand());
    commands.put("validate-config", new ValidateConfigCommand());
    commands.put("explain", new ExplainCommand());
    return commands;
  }

  /** Runs the subcommand named by {@code args} and exits with its status when it fails. */
  public static void main(String[] args) throws Exception {
    int status = run(List.of(args), System.getenv(), System.out, System.err);
    if (status != 0) {
      System.exit(status);
    }
  }

  /**
   * Runs the subcommand named by {@code args} (default {@code serve}) and returns its exit status.
   */
  static int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err)
      throws Exception {
    String name = "serve";
    List<String> rest = args;
    if (!args.isEmpty() && COMMANDS.containsKey(args.get(0))) {
      name = args.get(0);
      rest = args.subList(1, args.size());
    }
    return COMMANDS.get(name).run(rest, env, out, err);
  }
}
