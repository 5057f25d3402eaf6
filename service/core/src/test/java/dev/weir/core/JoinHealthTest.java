package dev.weir.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.ClusterRateLimitService;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.limiter.HealthStatus;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class JoinHealthTest {

  /** A discovery that reports peer sets only when the test says so. */
  private static final class ManualDiscovery implements PeerDiscovery {
    private volatile Consumer<Set<String>> listener;
    private volatile String problem = "";

    @Override
    public void start(Consumer<Set<String>> l) {
      this.listener = l;
    }

    void publish(Set<String> peers) {
      listener.accept(peers);
    }

    @Override
    public String problem() {
      return problem;
    }

    @Override
    public void close() {}
  }

  private final ManualDiscovery discovery = new ManualDiscovery();
  private WeirMember member;
  private String self;

  private void startMember() throws Exception {
    self = "127.0.0.1:" + WeirTest.freePort();
    member = Weir.builder().advertiseAddress(self).discovery(discovery).start();
  }

  @AfterEach
  void stop() {
    if (member != null) {
      member.close();
    }
  }

  @Test
  void health_startedBeforeFirstPeerSet_unhealthyWaitingForDiscovery() throws Exception {
    startMember();

    HealthStatus health = member.health();

    assertThat(health.healthy()).isFalse();
    assertThat(health.message()).isEqualTo(ClusterRateLimitService.WAITING_FOR_DISCOVERY);
    assertThat(health.peerCount()).isZero();
    assertThat(member.cluster().service().joined()).isFalse();
  }

  @Test
  void health_firstPeerSetWithSelfApplied_healthy() throws Exception {
    startMember();

    discovery.publish(Set.of(self));

    HealthStatus health = member.health();
    assertThat(health.healthy()).isTrue();
    assertThat(health.message()).isEmpty();
    assertThat(health.peerCount()).isEqualTo(1);
  }

  @Test
  void health_peerSetWithoutSelf_stillWaiting() throws Exception {
    startMember();

    discovery.publish(Set.of("127.0.0.1:1"));

    assertThat(member.health().healthy()).isFalse();
    assertThat(member.health().message()).isEqualTo(ClusterRateLimitService.WAITING_FOR_DISCOVERY);
  }

  @Test
  void health_waitingWithDiscoveryProblem_reportsBoth() throws Exception {
    startMember();
    discovery.problem = "etcd discovery degraded";

    assertThat(member.health().message())
        .isEqualTo(ClusterRateLimitService.WAITING_FOR_DISCOVERY + "|etcd discovery degraded");
  }

  @Test
  void health_joinedThenDroppedFromPeerSet_notFoundInPeerList() throws Exception {
    startMember();
    discovery.publish(Set.of(self));

    discovery.publish(Set.of("127.0.0.1:1"));

    assertThat(member.health().healthy()).isFalse();
    assertThat(member.health().message()).isEqualTo("this instance is not found in the peer list");
  }
}
