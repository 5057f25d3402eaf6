package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.config.ConfigException;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.testkit.FakeClock;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.testkit.InMemoryBucketStore;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.slf4j.LoggerFactory;

class ServeCommandTest {

  private static final WeirConfig CONFIG = TestConfigs.loopback();

  private final FakeClock clock = new FakeClock();
  private WeirNode node;

  @BeforeEach
  void start() throws Exception {
    node = WeirNode.builder(CONFIG).clock(clock).store(new InMemoryBucketStore(clock)).start();
  }

  @AfterEach
  void stop() {
    node.close();
  }

  @Test
  void startedLine_noVariableSet_endsWithoutASettingsLabel() {
    String line =
        ServeCommand.startedLine(
            CONFIG, OpsSettings.DEFAULTS, node, ClusterSettings.defaults(), "");

    assertThat(line)
        .startsWith(
            "Weir node started: version=" + BuildInfo.version() + " grpc_address=127.0.0.1:")
        .endsWith(" handoff=true peer_failure_mode=reroute")
        .doesNotContain("settings:");
  }

  @Test
  void startedLine_variablesSet_listedAfterSettings() {
    String line =
        ServeCommand.startedLine(
            CONFIG, OpsSettings.DEFAULTS, node, ClusterSettings.defaults(), "WEIR_CACHE_SIZE=10");

    assertThat(line).endsWith(" handoff=true peer_failure_mode=reroute settings: WEIR_CACHE_SIZE=10");
  }

  /**
   * A builder of a node on {@code config} and {@code clock} whose extra HTTP routes fail to be made
   * with an {@link IllegalStateException}, "the extra routes cannot be made".
   */
  static WeirNode.Builder extraRoutesFail(WeirConfig config, FakeClock clock) {
    return WeirNode.builder(config)
        .clock(clock)
        .store(new InMemoryBucketStore(clock))
        .warmUp(Duration.ZERO)
        .extraHttpRoutes(
            health -> {
              throw new IllegalStateException("the extra routes cannot be made");
            });
  }

  @Test
  void start_componentFailsWithAnUnexpectedRuntimeException_exit1WithOneLineAndTheTraceAtDebug() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int[] status = {0};
    Logger logger = (Logger) LoggerFactory.getLogger(ServeCommand.class);
    ListAppender<ILoggingEvent> logged = new ListAppender<>();
    logged.start();
    logger.addAppender(logged);
    Level level = logger.getLevel();
    logger.setLevel(Level.DEBUG);
    WeirNode started;
    try {
      started =
          ServeCommand.start(
              extraRoutesFail(CONFIG, clock),
              new PrintStream(err, true, StandardCharsets.UTF_8),
              status,
              List.of());
    } finally {
      logger.detachAppender(logged);
      logger.setLevel(level);
    }

    assertThat(started).isNull();
    assertThat(status[0]).isEqualTo(ServeCommand.EXIT_START_FAILED);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            "cannot start: the extra routes cannot be made (WEIR_LOG_LEVEL=debug logs the stack trace)"
                + System.lineSeparator());
    assertThat(logged.list)
        .singleElement()
        .satisfies(
            event -> {
              assertThat(event.getLevel()).isEqualTo(Level.DEBUG);
              assertThat(event.getThrowableProxy().getClassName())
                  .isEqualTo(IllegalStateException.class.getName());
            });
  }

  @Test
  void read_guberDiscoveryWithAutoTls_errorNamesTheGuberVariable() {
    assertThatThrownBy(
            () ->
                ServeCommand.NodeSettings.read(
                    Map.of(
                        "GUBER_PEER_DISCOVERY_TYPE", "dns",
                        "GUBER_DNS_FQDN", "weir",
                        "GUBER_TLS_AUTO", "true")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("may have peers (GUBER_PEER_DISCOVERY_TYPE=dns)")
        .hasMessageNotContaining("WEIR_PEER_DISCOVERY_TYPE");
  }

  @Test
  void read_etcdDiscoveryAdvertiseAddressHostGrpcRefuses_errorNamesVariableValueAndWhatIsAllowed() {
    assertThatThrownBy(
            () ->
                ServeCommand.NodeSettings.read(
                    Map.of(
                        "WEIR_PEER_DISCOVERY_TYPE", "etcd",
                        "WEIR_ADVERTISE_ADDRESS", "weir_1:1051",
                        "WEIR_PEER_INSECURE", "true")))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("WEIR_ADVERTISE_ADDRESS='weir_1:1051' is not valid: expected ")
        .hasMessageContaining("host 'weir_1' is refused by gRPC; give " + HostPort.GRPC_HOSTS);
  }

  @Test
  void read_dnsDiscoveryGrpcAddressAdvertisedHostGrpcRefuses_errorNamesTheGrpcAddress() {
    assertThatThrownBy(
            () ->
                ServeCommand.NodeSettings.read(
                    Map.of(
                        "WEIR_PEER_DISCOVERY_TYPE", "dns",
                        "WEIR_DNS_FQDN", "weir",
                        "GUBER_GRPC_ADDRESS", "weir_1:1051",
                        "WEIR_PEER_INSECURE", "true")))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("GUBER_GRPC_ADDRESS='weir_1:1051' is not valid: expected ")
        .hasMessageContaining("WEIR_ADVERTISE_ADDRESS is unset")
        .hasMessageContaining("host 'weir_1' is refused by gRPC");
  }

  @ParameterizedTest
  @CsvSource({"dns,WEIR_DNS_FQDN,weir-peers", "k8s,WEIR_K8S_POD_IP,10.0.0.1"})
  void read_dnsOrK8sDiscoveryPeerAddressOnPort0_errorNamesPeerAddressValueAndWhatIsAllowed(
      String type, String variable, String value) {
    assertThatThrownBy(
            () ->
                ServeCommand.NodeSettings.read(
                    Map.of(
                        "GUBER_PEER_DISCOVERY_TYPE", type,
                        variable, value,
                        "WEIR_PEER_ADDRESS", "0.0.0.0:0",
                        "WEIR_PEER_INSECURE", "true")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_PEER_ADDRESS='0.0.0.0:0' is not valid with GUBER_PEER_DISCOVERY_TYPE="
                + type
                + ": port 0 has this node listen for peers on a port the system picks at start,"
                + " but with this discovery every node calls its peers at its own peer port;"
                + " set WEIR_PEER_ADDRESS to a port of 1 to 65535 that every node shares"
                + " (default 1052)");
  }

  @Test
  void read_etcdDiscoveryPeerAddressOnPort0_acceptedAsTheRegistrationNamesThePort() {
    assertThat(
            ServeCommand.NodeSettings.read(
                    Map.of(
                        "WEIR_PEER_DISCOVERY_TYPE", "etcd",
                        "WEIR_PEER_ADDRESS", "127.0.0.1:0",
                        "WEIR_PEER_INSECURE", "true"))
                .peers()
                .address()
                .port())
        .isZero();
  }

  @Test
  void read_aloneAdvertiseAddressHostGrpcRefuses_acceptedAsNoPeerCallsIt() {
    assertThat(
            ServeCommand.NodeSettings.read(Map.of("WEIR_ADVERTISE_ADDRESS", "weir_1:1051"))
                .config()
                .advertiseAddress())
        .isEqualTo(new HostPort("weir_1", 1051));
  }

  @Test
  void settings_misspelledSecretVariable_masked() {
    String settings =
        ServeCommand.settings(
            Map.of(
                "WEIR_ETCD_PASWORD", "hunter2",
                "GUBER_PEER_SECRT", "s3cret",
                "WEIR_CAHCE_SIZE", "10"));

    assertThat(settings)
        .isEqualTo("GUBER_PEER_SECRT=**** WEIR_CAHCE_SIZE=10 WEIR_ETCD_PASWORD=****");
  }
}
