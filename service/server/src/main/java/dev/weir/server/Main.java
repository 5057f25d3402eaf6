package dev.weir.server;

import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The entry point of {@code weir.jar}: {@code java -jar weir.jar [SUBCOMMAND] [ARGS]}. Without a
 * subcommand it serves ({@code serve [--config FILE]}); settings come from the environment. {@code
 * --help}, {@code -h} or {@code help} print what the jar does and its subcommands ({@code help
 * COMMAND} or {@code COMMAND --help} one subcommand's help), {@code --version} or {@code version}
 * the version; each exits 0.
 */
public final class Main {

  // First, before any static field below can load a Netty class.
  static {
    NettyRecycling.turnOff(System.getProperties());
  }

  /** The subcommands by name; the first is the default. Add new ones here. */
  static final Map<String, Command> COMMANDS = commands();

  /** The arguments that ask for help, first or after a subcommand's name. */
  static final Set<String> HELP = Set.of("--help", "-h", "help");

  /** The pointer to the subcommands' help that errors naming a subcommand end with. */
  static final String HELP_POINTER = "java -jar weir.jar --help lists them";

  /** The arguments that ask for the version. */
  static final Set<String> VERSION = Set.of("--version", "version");

  private Main() {}

  private static Map<String, Command> commands() {
    Map<String, Command> commands = new LinkedHashMap<>();
    commands.put("serve", new ServeCommand());
    commands.put("validate-config", new ValidateConfigCommand());
    commands.put("explain", new ExplainCommand());
    commands.put("ratelimit", new RatelimitCommand());
    return commands;
  }

  /**
   * Runs the subcommand named by {@code args} and exits with its status when it fails; what
   * libraries log through {@code java.util.logging} goes through {@link JulBridge}. Loading this
   * class turns Netty's recycler off unless the command line sized it ({@link NettyRecycling}).
   */
  public static void main(String[] args) throws Exception {
    JulBridge.installThrottled();
    int status = run(List.of(args), System.getenv(), System.out, System.err);
    if (status != 0) {
      System.exit(status);
    }
  }

  /**
   * Runs the subcommand named by {@code args} (default {@code serve}), or prints help or the
   * version, and returns the exit status.
   */
  static int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err)
      throws Exception {
    if (!args.isEmpty() && HELP.contains(args.get(0))) {
      return help(args.subList(1, args.size()), out, err);
    }
    if (!args.isEmpty() && VERSION.contains(args.get(0))) {
      out.println("weir " + BuildInfo.version());
      return 0;
    }
    String name = "serve";
    List<String> rest = args;
    if (!args.isEmpty() && COMMANDS.containsKey(args.get(0))) {
      name = args.get(0);
      rest = args.subList(1, args.size());
    }
    Command command = COMMANDS.get(name);
    if (rest.contains("--help") || rest.contains("-h")) {
      out.println(command.help());
      return 0;
    }
    return command.run(rest, env, out, err);
  }

  /** Prints the jar's help, or with one argument naming a subcommand that subcommand's help. */
  private static int help(List<String> args, PrintStream out, PrintStream err) {
    if (args.isEmpty()) {
      out.println(Help.overview(COMMANDS, BuildInfo.version()));
      return 0;
    }
    Command command = COMMANDS.get(args.get(0));
    if (command == null || args.size() > 1) {
      err.println(
          "help takes one subcommand of "
              + COMMANDS.keySet()
              + ", got "
              + args
              + "; "
              + HELP_POINTER);
      return ServeCommand.EXIT_CONFIG;
    }
    out.println(command.help());
    return 0;
  }
}
