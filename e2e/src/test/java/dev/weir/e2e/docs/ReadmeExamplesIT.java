package dev.weir.e2e.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.e2e.envoy.RepoFiles;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Runs README.md's shell examples as written, against the built {@code weir.jar}, with the ports
 * they name (see {@link ShellSandbox}), and checks that they answer what the README shows: the
 * quick start's requests, the three-node cluster reaching three peers, and the Envoy example's 200,
 * 200, 429.
 */
class ReadmeExamplesIT {

  private static final Duration LIMIT = Duration.ofMinutes(3);
  private static final String SEPARATOR = "=== next example ===";

  private static ReadmeExamples readme;
  private static ShellSandbox sandbox;

  @BeforeAll
  static void setUp() throws Exception {
    readme = ReadmeExamples.of(RepoFiles.root().resolve("README.md"));
    sandbox = ShellSandbox.at(RepoFiles.root());
  }

  /** Returns the README's command that runs a node: the build block's {@code java -jar} line. */
  private static String runNodeLine() {
    List<String> lines =
        readme.under("Weir", "sh").get(0).lines().filter(l -> l.startsWith("java -jar")).toList();
    assertThat(lines).as("the README's command running a node").hasSize(1);
    return lines.get(0);
  }

  @Test
  void quickStart_asWritten_answersAsTheReadmeShows() throws Exception {
    List<String> commands = readme.under("Quick start", "sh");
    List<String> answers = readme.under("Quick start", "json");
    assertThat(commands).hasSize(2).hasSameSizeAs(answers);
    StringBuilder script =
        new StringBuilder(runNodeLine())
            .append(" > /dev/null 2>&1 &\n")
            .append("until curl -sf http://localhost:1050/v1/HealthCheck > /dev/null;")
            .append(" do sleep 0.5; done\n");
    for (String command : commands) {
      script.append("echo '").append(SEPARATOR).append("'\n").append(command).append("\necho\n");
    }
    script.append("kill $(jobs -p); wait\n");

    ShellSandbox.Result result = sandbox.run(script.toString(), LIMIT);

    List<String> printed = new ArrayList<>();
    for (String part : result.stdout().split(SEPARATOR + "\n")) {
      if (!part.isBlank()) {
        printed.add(withoutResetTime(part.strip()));
      }
    }
    assertThat(printed)
        .as(result.stderr())
        .containsExactlyElementsOf(answers.stream().map(a -> withoutResetTime(a.strip())).toList());
  }

  @Test
  void threeNodeCluster_asWritten_reachesThreePeers() throws Exception {
    List<String> blocks = readme.under("A three-node cluster", "sh");
    assertThat(blocks).hasSize(1);

    // The block ends when every node is ready; the health of node 2 then shows the three peers.
    ShellSandbox.Result result =
        sandbox.run(
            blocks.get(0)
                + "\nstatus=$?\ncurl -s http://127.0.0.1:2050/v1/HealthCheck"
                + "\nkill $(jobs -p); wait\nexit $status\n",
            LIMIT);

    assertThat(result.status()).as(result.stderr()).isZero();
    assertThat(result.stdout())
        .contains("\"status\":\"healthy\"", "\"peer_count\":3")
        .contains("127.0.0.1:1051", "127.0.0.1:2051", "127.0.0.1:3051");
  }

  @Test
  void envoyExample_asWritten_printsTwoHundredTwiceThen429() throws Exception {
    List<String> blocks = readme.under("As Envoy's rate-limit service", "sh");
    assertThat(blocks).hasSize(1);
    assertThat(blocks.get(0)).contains("# 200, 200, 429");

    ShellSandbox.Result result = sandbox.run(blocks.get(0) + "\nkill $(jobs -p); wait\n", LIMIT);

    assertThat(result.stdout())
        .as(result.stderr())
        .isEqualTo("OK /tmp/weir-ratelimit.yaml\n200\n200\n429\n");
  }

  private static String withoutResetTime(String json) {
    return json.replaceAll("\"reset_time\":\"\\d+\"", "\"reset_time\":\"...\"");
  }
}
