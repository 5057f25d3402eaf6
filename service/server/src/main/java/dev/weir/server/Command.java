package dev.weir.server;

import java.io.PrintStream;
import java.util.List;
import java.util.Map;

/** A subcommand of {@code weir.jar}, such as serving (the default). */
public interface Command {

  /**
   * Runs with the arguments after the subcommand's name, the environment and the output streams;
   * returns the process exit status.
   */
  int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err)
      throws Exception;

  /**
   * Returns the command's usage on one line, starting {@code usage: java -jar weir.jar}, as a
   * usage error names it.
   */
  String usage();

  /** Returns what the command does in one line, listed by {@code java -jar weir.jar --help}. */
  default String summary() {
    return "";
  }

  /**
   * Returns the command's help, printed by {@code java -jar weir.jar COMMAND --help}: its usage,
   * its arguments and its exit statuses.
   */
  default String help() {
    return summary();
  }
}
