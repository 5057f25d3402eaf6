package dev.weir.helm;

import static org.assertj.core.api.Assertions.assertThat;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Helm's own lint of the chart, and the chart's metadata against the project's. */
class ChartLintTest {

  @Test
  void lintStrict_passesWithoutMessages() {
    LintResult result = new Helm(Chart.DIR).lint().strict().call();

    assertThat(result.getMessages())
        .as("lint messages")
        .noneMatch(m -> m.contains("[ERROR]") || m.contains("[WARNING]"));
    assertThat(result.isFailed()).isFalse();
  }

  @ParameterizedTest
  @MethodSource("dev.weir.helm.ChartTest#matrix")
  void lintStrict_passesForEveryOverride(String values) {
    LintResult result = Chart.lint(values);

    assertThat(result.getMessages())
        .as("lint messages for %s", values)
        .noneMatch(m -> m.contains("[ERROR]") || m.contains("[WARNING]"));
    assertThat(result.isFailed()).isFalse();
  }

  @Test
  void lintStrict_failsForAValueTheSchemaRefuses() {
    assertThat(Chart.lint("replicaCount: two\n").isFailed()).isTrue();
  }

  @Test
  void chartVersion_isTheProjectsVersion() throws Exception {
    Map<?, ?> chart =
        Serialization.unmarshal(Files.readString(Chart.DIR.resolve("Chart.yaml")), Map.class);
    String version = System.getProperty("weir.version");

    assertThat(version).as("weir.version, set by the build").isNotBlank();
    assertThat(chart.get("version")).isEqualTo(version);
    assertThat(chart.get("name")).isEqualTo("weir");
    assertThat(List.of(chart.get("apiVersion"))).containsExactly("v2");
  }
}
