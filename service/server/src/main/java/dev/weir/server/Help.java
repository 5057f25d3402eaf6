package dev.weir.server;

import java.util.Map;

/** The text {@code java -jar weir.jar --help} prints: what Weir is and its subcommands. */
final class Help {

  private Help() {}

  /** Returns the overview of {@code version} listing {@code commands} with their summaries. */
  static String overview(Map<String, Command> commands, String version) {
    StringBuilder text =
        new StringBuilder()
            .append("Weir ")
            .append(version)
            .append(
                ": a distributed rate-limit service speaking Gubernator's API (gRPC and HTTP/JSON)")
            .append(" and Envoy's rate-limit service.\n\n")
            .append("usage: java -jar weir.jar [COMMAND] [ARGS]\n\n")
            .append("commands:\n");
    int width = "help [COMMAND]".length();
    for (String name : commands.keySet()) {
      width = Math.max(width, name.length());
    }
    String first = commands.keySet().iterator().next();
    for (Map.Entry<String, Command> command : commands.entrySet()) {
      String summary = command.getValue().summary();
      if (command.getKey().equals(first)) {
        summary = summary + (summary.isEmpty() ? "" : " ") + "(the default)";
      }
      line(text, width, command.getKey(), summary);
    }
    line(text, width, "help [COMMAND]", "print this help, or a command's (also --help, -h)");
    line(text, width, "version", "print the version (also --version)");
    return text.append('\n')
        .append("java -jar weir.jar COMMAND --help describes one command. A node's settings are\n")
        .append(
            "environment variables (WEIR_*, or Gubernator's GUBER_*): java -jar weir.jar serve\n")
        .append("--help names the first ones to know, README.md#configuration lists them all.")
        .toString();
  }

  private static void line(StringBuilder text, int width, String name, String summary) {
    text.append("  ").append(name);
    text.append(" ".repeat(width - name.length() + 2)).append(summary).append('\n');
  }
}
