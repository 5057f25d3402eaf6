package dev.weir.server;

import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

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
    return commands;
  }

  /**
   * The system property holding the JDK HTTP server's limit, in seconds, on reading one request;
   * the JDK's own default is unlimited, which lets a client that stalls mid-request hold a thread.
   */
  static final String MAX_REQ_TIME = "sun.net.httpserver.maxReqTime";

  /** The {@link #MAX_REQ_TIME} used when the user sets none. */
  static final String DEFAULT_MAX_REQ_TIME_SECONDS = "30";

  /**
   * Runs the subcommand named by {@code args} and exits with its status when it fails; what
   * libraries log through {@code java.util.logging} goes through {@link JulBridge}.
   */
  public static void main(String[] args) throws Exception {
    JulBridge.installThrottled();
    applyHttpServerDefaults(System.getProperties());
    int status = run(List.of(args), System.getenv(), System.out, System.err);
    if (status != 0) {
      System.exit(status);
    }
  }

  /**
   * Sets {@link #MAX_REQ_TIME} in {@code properties} to {@value #DEFAULT_MAX_REQ_TIME_SECONDS}
   * seconds unless the user set it (e.g. {@code -Dsun.net.httpserver.maxReqTime=60}); the JDK
   * server reads it once, when its first listener starts.
   */
  static void applyHttpServerDefaults(Properties properties) {
    properties.putIfAbsent(MAX_REQ_TIME, DEFAULT_MAX_REQ_TIME_SECONDS);
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
