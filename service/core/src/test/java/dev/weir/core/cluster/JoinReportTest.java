package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.cluster.peer.PeerException;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import io.grpc.Status;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class JoinReportTest {

  private static final Duration WAITED = Duration.ofMillis(2500);

  private LocalCluster cluster;
  private ListAppender<ILoggingEvent> appender;

  @AfterEach
  void stop() {
    if (appender != null) {
      ((Logger) LoggerFactory.getLogger(ClusterNode.class)).detachAppender(appender);
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private static CompletableFuture<?> failed(Status status) {
    return CompletableFuture.failedFuture(
        new PeerException("p", "error while announcing to peer 'p'", status.asRuntimeException()));
  }

  private static JoinReport report(Map<String, List<CompletableFuture<?>>> calls) {
    return JoinReport.of(calls, WAITED);
  }

  @Test
  void of_everyCallAnswered_complete() {
    JoinReport report =
        report(Map.of("10.0.0.2:1051", List.of(CompletableFuture.completedFuture(null))));

    assertThat(report.complete()).isTrue();
  }

  @Test
  void describe_callCancelledBecauseThePeerWasFoundDown_notReachableAndExpected() {
    Status cancelled =
        Status.CANCELLED
            .withDescription("Context cancelled")
            .withCause(new PeerException("p", "peer 'p' is down: cannot connect", null));

    JoinReport report = report(Map.of("10.0.0.2:1051", List.of(failed(cancelled))));

    assertThat(report.expected()).isTrue();
    assertThat(report.describe()).contains("10.0.0.2:1051 (not reachable)");
  }

  @Test
  void describe_unreachableAndSlowPeers_expectedNamingEachInWords() {
    Map<String, List<CompletableFuture<?>>> calls = new LinkedHashMap<>();
    calls.put("10.0.0.2:1051", List.of(CompletableFuture.completedFuture(null)));
    calls.put("10.0.0.3:1051", List.of(failed(Status.UNAVAILABLE.withDescription("io exception"))));
    calls.put("10.0.0.4:1051", List.of(new CompletableFuture<>()));
    calls.put(
        "10.0.0.5:1051",
        List.of(CompletableFuture.completedFuture(null), failed(Status.DEADLINE_EXCEEDED)));

    JoinReport report = report(calls);

    assertThat(report.complete()).isFalse();
    assertThat(report.expected()).isTrue();
    assertThat(report.describe())
        .isEqualTo(
            "joined before 3 of 4 peers answered: 10.0.0.3:1051 (not reachable), 10.0.0.4:1051 (no"
                + " answer within 2500ms), 10.0.0.5:1051 (no answer within 2500ms); expected while"
                + " they are still starting: this node keeps telling them it is back until they"
                + " answer, and they hand its keys over then");
  }

  @Test
  void describe_peerRefused_notExpectedNamingTheRefusal() {
    JoinReport report =
        report(
            Map.of(
                "10.0.0.2:1051",
                List.of(failed(Status.UNAUTHENTICATED.withDescription("wrong peer secret")))));

    assertThat(report.expected()).isFalse();
    assertThat(report.describe())
        .isEqualTo(
            "joined without an answer from 1 of 1 peers: 10.0.0.2:1051 (refused: UNAUTHENTICATED:"
                + " wrong peer secret); check that every node has the same WEIR_PEER_SECRET or"
                + " trusts the same CA (docs/cluster.md#peer-protocol)");
  }

  @Test
  void describe_copyRefusedForItsAddress_namesTheRefusalWithoutTheCredentialsHint() {
    String reason =
        "field 'address' is '10.0.0.9:1051', which discovery does not list, and its host is not the"
            + " caller's IP (the notice came from 10.0.0.7)";
    JoinReport report =
        report(
            Map.of(
                "10.0.0.2:1051", List.of(failed(Status.INVALID_ARGUMENT.withDescription(reason)))));

    assertThat(report.expected()).isFalse();
    assertThat(report.describe())
        .isEqualTo(
            "joined without an answer from 1 of 1 peers: 10.0.0.2:1051 (refused: INVALID_ARGUMENT: "
                + reason
                + ")");
  }

  @Test
  void join_peerDown_oneInfoLineInWordsAndNoWarning() {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS);
    Node down = cluster.node(1);
    cluster.kill(down);
    appender = new ListAppender<>();
    appender.start();
    Logger log = (Logger) LoggerFactory.getLogger(ClusterNode.class);
    log.addAppender(appender);
    log.setLevel(Level.INFO);

    cluster.restart(cluster.node(0));

    List<ILoggingEvent> joinEvents =
        appender.list.stream().filter(e -> e.getFormattedMessage().startsWith("joined")).toList();
    assertThat(appender.list)
        .extracting(ILoggingEvent::getFormattedMessage)
        .noneMatch(m -> m.contains("return copy request") || m.contains("join notice"));
    assertThat(joinEvents).hasSize(1);
    assertThat(joinEvents.get(0).getLevel()).isEqualTo(Level.INFO);
    assertThat(joinEvents.get(0).getFormattedMessage())
        .startsWith("joined before 1 of 1 peers answered: " + down.address() + " (not reachable);")
        .doesNotContain("Exception");
  }
}
