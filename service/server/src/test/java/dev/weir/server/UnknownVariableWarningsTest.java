package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class UnknownVariableWarningsTest {

  private static final Optional<Path> FILE = Optional.of(Path.of("/etc/weir.env"));

  private static final List<String> WARNINGS =
      List.of(
          "WEIR_CAHCE_SIZE (in the environment) is not a Weir setting and is ignored; did you"
              + " mean WEIR_CACHE_SIZE?");

  @Test
  void report_logLevelShowsWarnings_loggedOnceNotPrinted() {
    Logger log = (Logger) LoggerFactory.getLogger("UnknownVariableWarningsTest.warn");
    log.setLevel(Level.WARN);
    ListAppender<ILoggingEvent> logged = new ListAppender<>();
    logged.start();
    log.addAppender(logged);
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream stderr = new PrintStream(err, true, StandardCharsets.UTF_8);

    List<String> unshown = UnknownVariableWarnings.report(WARNINGS, log, stderr);

    assertThat(unshown).as("still to print before a start-up error").isEqualTo(WARNINGS);
    assertThat(logged.list).extracting(ILoggingEvent::getFormattedMessage).isEqualTo(WARNINGS);
    assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void report_logLevelHidesWarnings_printedOnceToStderr() {
    Logger log = (Logger) LoggerFactory.getLogger("UnknownVariableWarningsTest.error");
    log.setLevel(Level.ERROR);
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream stderr = new PrintStream(err, true, StandardCharsets.UTF_8);

    List<String> unshown = UnknownVariableWarnings.report(WARNINGS, log, stderr);

    assertThat(unshown).as("not printed twice should the start then fail").isEmpty();
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(WARNINGS.get(0) + System.lineSeparator());
  }

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

  /** What the kubelet's service links set for a Service {@code weir} with two ports. */
  private static Map<String, String> serviceLinks() {
    Map<String, String> env = new HashMap<>();
    env.put("WEIR_SERVICE_HOST", "10.96.0.12");
    env.put("WEIR_SERVICE_PORT", "8081");
    env.put("WEIR_SERVICE_PORT_GRPC_RLS", "8081");
    env.put("WEIR_SERVICE_PORT_HTTP", "8080");
    env.put("WEIR_PORT", "tcp://10.96.0.12:8081");
    env.put("WEIR_PORT_8081_TCP", "tcp://10.96.0.12:8081");
    env.put("WEIR_PORT_8081_TCP_PROTO", "tcp");
    env.put("WEIR_PORT_8081_TCP_PORT", "8081");
    env.put("WEIR_PORT_8081_TCP_ADDR", "10.96.0.12");
    env.put("WEIR_PORT_8080_TCP", "tcp://10.96.0.12:8080");
    env.put("WEIR_PORT_8080_TCP_PROTO", "tcp");
    env.put("WEIR_PORT_8080_TCP_PORT", "8080");
    env.put("WEIR_PORT_8080_TCP_ADDR", "10.96.0.12");
    // an IPv6 Service weir-status with one UDP port
    env.put("WEIR_STATUS_SERVICE_HOST", "fd00:10:96::3");
    env.put("WEIR_STATUS_SERVICE_PORT", "1053");
    env.put("WEIR_STATUS_PORT", "udp://[fd00:10:96::3]:1053");
    env.put("WEIR_STATUS_PORT_1053_UDP", "udp://[fd00:10:96::3]:1053");
    env.put("WEIR_STATUS_PORT_1053_UDP_PROTO", "udp");
    env.put("WEIR_STATUS_PORT_1053_UDP_PORT", "1053");
    env.put("WEIR_STATUS_PORT_1053_UDP_ADDR", "fd00:10:96::3");
    return env;
  }

  @Test
  void of_kubernetesServiceLinks_noWarning() {
    assertThat(UnknownVariableWarnings.of(serviceLinks(), Map.of(), Optional.empty())).isEmpty();
  }

  @Test
  void of_serviceLinkShapesWithoutTheirService_orWithOtherValues_orInTheFile_warned() {
    // no WEIR_SERVICE_HOST and WEIR_SERVICE_PORT beside them: no Service weir set them
    Map<String, String> alone =
        Map.of("WEIR_PORT", "tcp://10.96.0.12:8081", "WEIR_SERVICE_PORT_HTTP", "8080");
    Map<String, String> otherValues = serviceLinks();
    otherValues.put("WEIR_PORT_8081_TCP_PORT", "8080");
    otherValues.put("WEIR_PORT_8080_TCP_ADDR", "weir.example");
    otherValues.put("WEIR_SERVICE_PORT_HTTP", "http");
    otherValues.put("WEIR_PORT_8081_TCP_PROTO", "udp");
    Map<String, String> notAShape = serviceLinks();
    notAShape.put("WEIR_SERVICE_PORTS", "8081");
    notAShape.put("WEIR_PORT_8081_HTTP", "tcp://10.96.0.12:8081");

    assertThat(UnknownVariableWarnings.of(alone, Map.of(), Optional.empty()))
        .extracting(w -> w.substring(0, w.indexOf(' ')))
        .containsExactly("WEIR_PORT", "WEIR_SERVICE_PORT_HTTP");
    assertThat(UnknownVariableWarnings.of(otherValues, Map.of(), Optional.empty()))
        .extracting(w -> w.substring(0, w.indexOf(' ')))
        .containsExactly(
            "WEIR_PORT_8080_TCP_ADDR",
            "WEIR_PORT_8081_TCP_PORT",
            "WEIR_PORT_8081_TCP_PROTO",
            "WEIR_SERVICE_PORT_HTTP");
    assertThat(UnknownVariableWarnings.of(notAShape, Map.of(), Optional.empty()))
        .extracting(w -> w.substring(0, w.indexOf(' ')))
        .containsExactly("WEIR_PORT_8081_HTTP", "WEIR_SERVICE_PORTS");
    assertThat(UnknownVariableWarnings.of(Map.of(), serviceLinks(), FILE))
        .hasSize(serviceLinks().size());
  }
}
