package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HelpAndVersionTest {

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private int run(String... args) throws Exception {
    return Main.run(
        List.of(args),
        Map.of(),
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  private String stdout() {
    return out.toString(StandardCharsets.UTF_8);
  }

  private String stderr() {
    return err.toString(StandardCharsets.UTF_8);
  }

  @ParameterizedTest
  @ValueSource(strings = {"--help", "-h", "help"})
  void help_listsEveryCommandWithItsSummaryAndExits0(String flag) throws Exception {
    int status = run(flag);

    assertThat(status).isZero();
    assertThat(stderr()).isEmpty();
    assertThat(stdout())
        .startsWith("Weir " + BuildInfo.version() + ": a distributed rate-limit service")
        .contains("usage: java -jar weir.jar [COMMAND] [ARGS]")
        .contains("  serve            run a node (the default)")
        .contains("  validate-config  check an Envoy descriptor config file or folder")
        .contains("  explain          show which rule an Envoy descriptor matches, and its counter")
        .contains("  help [COMMAND]   print this help")
        .contains("  version          print the version (also --version)");
    Main.COMMANDS.forEach(
        (name, command) ->
            assertThat(stdout()).contains("  " + name + " ").contains(command.summary()));
  }

  @ParameterizedTest
  @ValueSource(strings = {"serve", "validate-config", "explain"})
  void commandHelp_helpCommandAndDashDashHelpAndDashH_printTheCommandsHelp(String command)
      throws Exception {
    String expected = Main.COMMANDS.get(command).help() + System.lineSeparator();

    assertThat(run("help", command)).isZero();
    assertThat(stdout()).isEqualTo(expected);
    out.reset();
    assertThat(run(command, "--help")).isZero();
    assertThat(stdout()).isEqualTo(expected);
    out.reset();
    assertThat(run(command, "-h")).isZero();
    assertThat(stdout()).isEqualTo(expected);
    assertThat(stderr()).isEmpty();
    assertThat(expected).startsWith("usage: java -jar weir.jar ");
  }

  @Test
  void validateConfigHelp_usageLineIsTheUsageErrorsAndDescribesStrict() throws Exception {
    String help = Main.COMMANDS.get("validate-config").help();

    assertThat(run("validate-config")).isEqualTo(2);
    assertThat(help.lines().findFirst())
        .contains("usage: java -jar weir.jar validate-config [--strict] PATH")
        .contains(stderr().strip());
    assertThat(help).contains("--strict  also print what loads but is likely a mistake");
    assertThat(help).doesNotContain("file and line");
  }

  @Test
  void serveHelp_withoutCommandName_isServesHelp() throws Exception {
    assertThat(run("--config", "weir.env", "--help")).isZero();

    assertThat(stdout()).startsWith("usage: java -jar weir.jar [serve] [--config FILE]");
  }

  /**
   * A {@code --config} line is a comment only when it starts with {@code #}: a {@code #} after a
   * value is part of the value (as in Gubernator's file), so {@code WEIR_ETCD_PASSWORD=pw # old}
   * sets the password {@code pw # old}; the help says so rather than that {@code #} starts a comment.
   */
  @Test
  void serveHelp_describesCommentsAsTheConfigFileReadsThem() throws Exception {
    assertThat(run("serve", "--help")).isZero();

    assertThat(dev.weir.core.config.EnvFile.parse("weir.env", List.of("# c", "WEIR_X=pw # old")))
        .containsExactly(Map.entry("WEIR_X", "pw # old"));
    assertThat(stdout())
        .doesNotContain("# starts a comment")
        .contains("a line starting with # is a comment;")
        .contains("a # after a value is part of it");
  }

  @Test
  void help_unknownCommand_exit2NamingTheCommands() throws Exception {
    int status = run("help", "bogus");

    assertThat(status).isEqualTo(2);
    assertThat(stderr())
        .isEqualTo(
            "help takes one subcommand of "
                + Main.COMMANDS.keySet()
                + ", got [bogus]; java -jar weir.jar --help lists them"
                + System.lineSeparator());
  }

  @ParameterizedTest
  @ValueSource(strings = {"--version", "version"})
  void version_printsTheBuildsVersionAndExits0(String flag) throws Exception {
    int status = run(flag);

    assertThat(status).isZero();
    assertThat(stdout()).isEqualTo("weir " + BuildInfo.version() + System.lineSeparator());
  }

  @Test
  void version_isTheMavenProjectVersion() {
    assertThat(BuildInfo.version())
        .isNotEqualTo(BuildInfo.UNKNOWN)
        .matches("\\d+\\.\\d+\\.\\d+(-SNAPSHOT)?");
  }
}
