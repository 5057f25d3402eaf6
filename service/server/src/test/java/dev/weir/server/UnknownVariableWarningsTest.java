package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class UnknownVariableWarningsTest {

  private static final Optional<Path> FILE = Optional.of(Path.of("/etc/weir.env"));

  @Test
  void of_knownVariablesAndOthers_noWarning() {
    assertThat(
            UnknownVariableWarnings.of(
                Map.of("WEIR_CACHE_SIZE", "10", "GUBER_GRPC_ADDRESS", ":1051", "PATH", "/bin"),
                Map.of("WEIR_PEER_SECRET", "x", "JAVA_HOME", "/opt/jdk"),
                FILE))
        .isEmpty();
  }

  @Test
  void of_misspelledInTheEnvironmentAndInTheFile_eachNamedWithWhereAndClosestName() {
    assertThat(
            UnknownVariableWarnings.of(
                Map.of("WEIR_CAHCE_SIZE", "10"),
                Map.of("GUBER_STATIC_PEERS", "a:1051", "WEIR_ENVOY_CONFG", "/x.yaml"),
                FILE))
        .containsExactly(
            "GUBER_STATIC_PEERS (in --config /etc/weir.env) is not a Weir setting and is"
                + " ignored; did you mean WEIR_STATIC_PEERS?",
            "WEIR_CAHCE_SIZE (in the environment) is not a Weir setting and is ignored; did you"
                + " mean WEIR_CACHE_SIZE?",
            "WEIR_ENVOY_CONFG (in --config /etc/weir.env) is not a Weir setting and is ignored;"
                + " did you mean WEIR_ENVOY_CONFIG?");
  }

  @Test
  void of_nameCloseToNothing_pointsAtTheList() {
    Map<String, String> environment = Map.of("GUBER_DEBUG", "true");

    assertThat(UnknownVariableWarnings.of(environment, Map.of(), Optional.empty()))
        .containsExactly(
            "GUBER_DEBUG (in the environment) is not a Weir setting and is ignored;"
                + " README.md#configuration lists every setting");
  }
}
