package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a newcomer meets in the real {@code weir.jar}: help and version, the start-up lines, a
 * misspelled variable, the Envoy adapter off, and a Ctrl-C stop.
 */
class FirstHourJarIT {

  /** The exit status of a JVM stopped by SIGINT (128 + 2) after its shutdown hooks ran. */
  private static final int SIGINT_EXIT = 130;

  private final HttpClient http = HttpClient.newHttpClient();

  private record Run(int status, String stdout, String stderr) {}

  private static Run jar(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-jar");
    command.add(NodeProcess.jar().toString());
    command.addAll(List.of(args));
    Path dir = Files.createTempDirectory("weir-cli");
    ProcessBuilder builder =
        new ProcessBuilder(command)
            .redirectOutput(dir.resolve("out").toFile())
            .redirectError(dir.resolve("err").toFile());
    builder
        .environment()
        .keySet()
        .removeIf(name -> name.startsWith("WEIR_") || name.startsWith("GUBER_"));
    Process process = builder.start();
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new IllegalStateException("weir.jar " + List.of(args) + " did not exit");
    }
    return new Run(
        process.exitValue(),
        Files.readString(dir.resolve("out"), StandardCharsets.UTF_8),
        Files.readString(dir.resolve("err"), StandardCharsets.UTF_8));
  }

  @Test
  void helpAndVersion_exit0WithTheCommandsAndTheProjectVersion() throws Exception {
    String version = System.getProperty("weir.version");

    Run help = jar("--help");
    Run serveHelp = jar("serve", "--help");
    Run printed = jar("--version");
    Run typo = jar("sevre");

    assertThat(help.status()).isZero();
    assertThat(help.stdout())
        .startsWith("Weir " + version + ": ")
        .contains("  serve ", "  validate-config ", "  explain ", "  version ");
    assertThat(serveHelp.status()).isZero();
    assertThat(serveHelp.stdout()).startsWith("usage: java -jar weir.jar [serve] [--config FILE]");
    assertThat(printed.status()).isZero();
    assertThat(printed.stdout()).isEqualTo("weir " + version + "\n");
    assertThat(typo.status()).isEqualTo(2);
    assertThat(typo.stderr())
        .startsWith(
            "argument 'sevre' is not valid: expected --config FILE or a subcommand of [serve,"
                + " validate-config, explain")
        .endsWith("]; java -jar weir.jar --help lists them\n");
  }

  @Test
  void node_misspelledVariableEnvoyOffAndCtrlC_saidInWords(@TempDir Path dir) throws Exception {
    Path config = dir.resolve("weir.env");
    Files.writeString(config, "WEIR_LOG_LEVLE=debug\n");
    try (NodeProcess node =
        NodeProcess.start(
            Map.of("WEIR_CAHCE_SIZE", "10", "WEIR_WARMUP", "20s"), "--config", config.toString())) {
      node.awaitHealthy(http);
      HttpResponse<String> json =
          http.send(
              HttpRequest.newBuilder(node.httpUri("/json"))
                  .POST(HttpRequest.BodyPublishers.ofString("{}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> version =
          http.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort + "/version"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());

      int status = node.interrupt(Duration.ofSeconds(30));

      assertThat(json.statusCode()).isEqualTo(404);
      assertThat(json.body()).contains("set WEIR_ENVOY_CONFIG");
      assertThat(version.body())
          .isEqualTo("{\"version\":\"" + System.getProperty("weir.version") + "\"}");
      assertThat(status).isEqualTo(SIGINT_EXIT);
      assertThat(node.stdout())
          .contains(
              "WARN  [main] dev.weir.server.ServeCommand - WEIR_CAHCE_SIZE (in the environment) is"
                  + " not a Weir setting and is ignored; did you mean WEIR_CACHE_SIZE?")
          .contains(
              "WEIR_LOG_LEVLE (in --config "
                  + config
                  + ") is not a Weir setting and is ignored; did you mean WEIR_LOG_LEVEL?")
          .containsPattern("transport warm-up: [1-9][0-9]* connections, [0-9]+ calls answered in ")
          .containsPattern(
              "decision warm-up: [1-9][0-9]* GetRateLimits calls answered in [0-9]+ ms")
          .contains("Weir node started: version=" + System.getProperty("weir.version") + " ")
          .contains(
              "Envoy rate-limit service: off (set WEIR_ENVOY_CONFIG to a descriptor YAML file or"
                  + " folder, or WEIR_ENVOY_CONFIG_SOURCE=xds (server WEIR_ENVOY_XDS_SERVER_URL,"
                  + " default localhost:18000), to serve ShouldRateLimit and POST /json)")
          .contains("Weir node stopped")
          .doesNotContain("peer forwarding:");
    }
  }
}
