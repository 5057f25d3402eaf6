package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.health.HealthChecker;
import dev.weir.core.health.HealthStatus;
import dev.weir.gubernator.http.GatewayRoutes;
import dev.weir.http.HttpRoute;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The routes an HTTP listener still serves while saturated ({@link HttpRoute#probe}) are each named
 * in docs/operations.md's "Overload and slow clients", the one place that lists them.
 */
class SaturationProbesDocumentedTest {

  /** The main sources that make probe routes, each checked below through the routes it makes. */
  private static final Set<String> PROBE_SOURCES =
      Set.of("GatewayRoutes.java", "ReadinessRoute.java", "RatelimitHttp.java");

  @Test
  void everyProbeRoute_namedWhereTheDocsListWhatIsServedWhenSaturated() throws IOException {
    HealthChecker checker = new HealthChecker();
    List<HttpRoute> routes = new ArrayList<>();
    routes.addAll(
        GatewayRoutes.healthRoutes(
            () -> new HealthStatus(true, "", 1, "127.0.0.1:1051", List.of("127.0.0.1:1051"))));
    routes.add(ReadinessRoute.of(checker));
    routes.add(RatelimitHttp.healthcheck(checker));
    List<String> probes =
        routes.stream()
            .filter(HttpRoute::servedWhenSaturated)
            .map(r -> r.method() + " " + r.path())
            .toList();
    String section = section(Files.readString(RepoRoot.find().resolve("docs/operations.md")));

    assertThat(probes)
        .containsExactlyInAnyOrder(
            "GET /v1/HealthCheck", "GET /v1/LiveCheck", "GET /readyz", "GET /healthcheck");
    assertThat(probes.stream().filter(probe -> !section.contains("`" + probe + "`")))
        .as("probe routes not named in docs/operations.md#overload-and-slow-clients")
        .isEmpty();
  }

  @Test
  void probeRoutes_madeOnlyByTheSourcesCheckedAbove() throws IOException {
    Set<String> making = new TreeSet<>();
    for (Path file : RepoRoot.mainJavaSources()) {
      if (!file.getFileName().toString().equals("HttpRoute.java")
          && Files.readString(file).contains("HttpRoute.probe(")) {
        making.add(file.getFileName().toString());
      }
    }

    assertThat(making).isEqualTo(new TreeSet<>(PROBE_SOURCES));
  }

  private static String section(String operations) {
    int start = operations.indexOf("\n## Overload and slow clients\n");
    assertThat(start).as("docs/operations.md has the section").isNotNegative();
    int end = operations.indexOf("\n## ", start + 1);
    return operations.substring(start, end < 0 ? operations.length() : end);
  }
}
