package dev.weir.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.DiscoveryComponent;
import dev.weir.core.discovery.CoalescedDiscovery;
import dev.weir.core.discovery.CoalescingListener;
import dev.weir.core.discovery.ManualScheduler;
import dev.weir.core.discovery.PeerAddress;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.dns.DnsDiscovery;
import dev.weir.core.discovery.dns.DnsSettings;
import dev.weir.core.health.ComponentHealth;
import dev.weir.core.health.HealthStatus;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class JoinHealthTest {

  /** A discovery that reports peer sets only when the test says so. */
  private static final class ManualDiscovery implements PeerDiscovery {
    private volatile Consumer<Set<String>> listener;
    private volatile String problem = "";
    private volatile String dataCenter = "";

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
    public String dataCenter() {
      return dataCenter;
    }

    @Override
    public void close() {}
  }

  private final ManualDiscovery discovery = new ManualDiscovery();
  private WeirMember member;
  private String self;

  private void startMember() throws Exception {
    startMember(discovery);
  }

  private void startMember(PeerDiscovery source) throws Exception {
    self = "127.0.0.1:" + WeirTest.freePort();
    member =
        Weir.builder()
            .advertiseAddress(self)
            .discovery(source)
            .peerSecret("join-health-test-secret")
            .start();
  }

  private ComponentHealth discoveryHealth() {
    return member.cluster().discoveryHealth().status();
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
    assertThat(health.message()).isEqualTo(DiscoveryComponent.WAITING_FOR_DISCOVERY);
    assertThat(health.peerCount()).isZero();
    assertThat(member.cluster().discoveryHealth().joined()).isFalse();
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
  void health_discoveryOfOneDataCenter_reportsItForThePeers() throws Exception {
    discovery.dataCenter = "eu-1";
    startMember();

    discovery.publish(Set.of(self));

    assertThat(member.health().dataCenter()).isEqualTo("eu-1");
  }

  @Test
  void health_coalescedDiscoveryOfOneDataCenter_reportsItForThePeers() throws Exception {
    ManualScheduler scheduler = new ManualScheduler();
    discovery.dataCenter = "eu-1";
    startMember(new CoalescedDiscovery(discovery, scheduler, CoalescingListener.DEFAULT_WINDOW));

    discovery.publish(Set.of(self));
    scheduler.advance(CoalescingListener.DEFAULT_WINDOW);

    assertThat(member.health().dataCenter()).isEqualTo("eu-1");
  }

  @Test
  void health_discoveryWithoutDataCenters_reportsNone() throws Exception {
    startMember();

    discovery.publish(Set.of(self));

    assertThat(member.health().dataCenter()).isEmpty();
  }

  @Test
  void discovery_peerSetWithoutSelf_notReadyNamingSelfAndThePeers() throws Exception {
    startMember();

    discovery.publish(Set.of("127.0.0.1:1"));

    ComponentHealth health = discoveryHealth();
    assertThat(member.cluster().health().ready()).isFalse();
    assertThat(health.healthy()).isFalse();
    assertThat(health.message())
        .isEqualTo(
            "this instance (" + self + ") is not in the peer list [127.0.0.1:1]; discovery must"
                + " report this node's advertise address (WEIR_ADVERTISE_ADDRESS)");
    assertThat(member.cluster().discoveryHealth().joined()).isFalse();
  }

  @Test
  void discovery_manyPeersWithoutSelf_namesTheFirstThreeAndCountsTheRest() throws Exception {
    startMember();

    discovery.publish(
        Set.of(
            "10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051", "10.0.0.4:1051", "10.0.0.5:1051"));

    assertThat(discoveryHealth().message())
        .startsWith(
            "this instance (" + self + ") is not in the peer list"
                + " [10.0.0.1:1051, 10.0.0.2:1051, 10.0.0.3:1051, ... and 2 more];");
  }

  @Test
  void ready_peerSetWithoutSelfThenWithSelf_readyAlthoughThePeerIsDown() throws Exception {
    startMember();
    discovery.publish(Set.of("127.0.0.1:1"));

    discovery.publish(Set.of("127.0.0.1:1", self));

    assertThat(discoveryHealth()).isEqualTo(ComponentHealth.ok());
    assertThat(member.cluster().health().ready()).isTrue();
  }

  @Test
  void health_waitingWithDiscoveryProblem_reportsBoth() throws Exception {
    startMember();
    discovery.problem = "etcd discovery degraded";

    assertThat(member.health().message())
        .isEqualTo(DiscoveryComponent.WAITING_FOR_DISCOVERY + "|etcd discovery degraded");
  }

  @Test
  void discovery_joinedThenDroppedFromPeerSet_notFoundInPeerList() throws Exception {
    startMember();
    discovery.publish(Set.of(self));

    discovery.publish(Set.of("127.0.0.1:1"));

    assertThat(member.cluster().health().ready()).isFalse();
    assertThat(discoveryHealth())
        .isEqualTo(ComponentHealth.unhealthy(DiscoveryComponent.NOT_FOUND_IN_PEER_LIST));
  }

  @Test
  void health_joinedWithDiscoveryProblem_healthyAndMessageCarriesTheProblem() throws Exception {
    startMember();
    discovery.publish(Set.of(self));

    discovery.problem =
        "DNS lookup of weir-peers failed (no A or AAAA records); keeping the last 1 known peers";

    HealthStatus health = member.health();
    assertThat(health.healthy()).isTrue();
    assertThat(health.message()).isEqualTo(discovery.problem);
  }

  @Test
  void discovery_droppedWithDiscoveryProblem_unhealthyReportingBoth() throws Exception {
    startMember();
    discovery.publish(Set.of(self));
    discovery.publish(Set.of("127.0.0.1:1"));

    discovery.problem = "etcd discovery degraded";

    assertThat(discoveryHealth())
        .isEqualTo(
            ComponentHealth.unhealthy(
                DiscoveryComponent.NOT_FOUND_IN_PEER_LIST + "|etcd discovery degraded"));
  }

  @Test
  void health_selfAloneWhileDiscoveryFailsSinceStart_unhealthyWaitingForSource() throws Exception {
    startMember();
    discovery.problem = "etcd unreachable";

    discovery.publish(Set.of(self));

    HealthStatus health = member.health();
    assertThat(health.healthy()).isFalse();
    assertThat(health.message())
        .isEqualTo(DiscoveryComponent.WAITING_FOR_SOURCE + "|etcd unreachable");
  }

  @Test
  void health_sourceAnswersWithPeersWhileTheirSetIsHeld_notHealthyAloneUntilItIsApplied() throws Exception {
    ManualScheduler scheduler = new ManualScheduler();
    startMember(new CoalescedDiscovery(discovery, scheduler, CoalescingListener.DEFAULT_WINDOW));
    discovery.problem = "etcd unreachable";
    discovery.publish(Set.of(self));
    String peer = "127.0.0.1:" + WeirTest.freePort();

    discovery.publish(Set.of(self, peer));
    discovery.problem = "";

    HealthStatus held = member.health();
    assertThat(held.healthy() && held.peerCount() == 1)
        .as("healthy alone while the peers are held: %s", held)
        .isFalse();
    scheduler.advance(CoalescingListener.DEFAULT_WINDOW);
    HealthStatus applied = member.health();
    // No node listens at the peer's address, so whether the peer already reads as down is a race.
    assertThat(applied.peers()).as("%s", applied).containsExactlyInAnyOrder(self, peer);
    assertThat(applied.message()).doesNotContain(DiscoveryComponent.WAITING_FOR_SOURCE);
  }

  @Test
  void health_sourceClearsItsProblemThenAnswersWithPeers_notHealthyAloneUntilTheirSetIsApplied()
      throws Exception {
    ManualScheduler scheduler = new ManualScheduler();
    startMember(new CoalescedDiscovery(discovery, scheduler, CoalescingListener.DEFAULT_WINDOW));
    discovery.problem = "DNS lookup of weir-peers failed";
    discovery.publish(Set.of(self));
    String peer = "127.0.0.1:" + WeirTest.freePort();

    discovery.problem = "";
    discovery.publish(Set.of(self, peer));

    HealthStatus held = member.health();
    assertThat(held.healthy() && held.peerCount() == 1)
        .as("healthy alone while the peers are held: %s", held)
        .isFalse();
    assertThat(held.message()).contains(CoalescedDiscovery.APPLYING);
    scheduler.advance(CoalescingListener.DEFAULT_WINDOW);
    HealthStatus applied = member.health();
    assertThat(applied.peers()).as("%s", applied).containsExactlyInAnyOrder(self, peer);
    assertThat(applied.message()).doesNotContain(CoalescedDiscovery.APPLYING);
  }

  @Test
  void health_dnsLookupFailsAtStartThenResolves_notHealthyAloneWithinTheCoalescingWindow()
      throws Exception {
    ManualScheduler scheduler = new ManualScheduler();
    self = "127.0.0.1:" + WeirTest.freePort();
    String peer = "127.0.0.2:" + PeerAddress.portOf(self);
    AtomicBoolean resolves = new AtomicBoolean();
    DnsDiscovery dns =
        new DnsDiscovery(
            new DnsSettings(List.of("weir-peers.weir.svc"), Duration.ofSeconds(5)),
            self,
            host -> {
              if (!resolves.get()) {
                throw new UnknownHostException(host + ": Name or service not known");
              }
              return List.of(InetAddress.getByName("127.0.0.2"));
            },
            scheduler);
    member =
        Weir.builder()
            .advertiseAddress(self)
            .discovery(new CoalescedDiscovery(dns, scheduler, CoalescingListener.DEFAULT_WINDOW))
            .peerSecret("join-health-test-secret")
            .start();
    HealthStatus failing = member.health();

    resolves.set(true);
    scheduler.advance(Duration.ofSeconds(5));
    HealthStatus held = member.health();
    scheduler.advance(CoalescingListener.DEFAULT_WINDOW);
    HealthStatus applied = member.health();

    assertThat(failing.message()).startsWith(DiscoveryComponent.WAITING_FOR_SOURCE);
    assertThat(held.healthy() && held.peerCount() == 1)
        .as("healthy alone while the resolved peers are held: %s", held)
        .isFalse();
    assertThat(held.message()).contains(CoalescedDiscovery.APPLYING);
    assertThat(applied.peers()).as("%s", applied).containsExactlyInAnyOrder(self, peer);
    assertThat(applied.message()).doesNotContain(CoalescedDiscovery.APPLYING);
  }

  @Test
  void health_discoveryRecoversWithoutNewPeerSet_joinsAtNextCheck() throws Exception {
    startMember();
    discovery.problem = "etcd unreachable";
    discovery.publish(Set.of(self));

    discovery.problem = "";

    assertThat(member.health().healthy()).isTrue();
  }

  @Test
  void health_dnsNameResolvesOnlyLater_unhealthyUntilThenAndHealthyThroughLaterFailures()
      throws Exception {
    ManualScheduler polls = new ManualScheduler();
    self = "127.0.0.1:" + WeirTest.freePort();
    AtomicBoolean resolves = new AtomicBoolean();
    DnsDiscovery dns =
        new DnsDiscovery(
            new DnsSettings(List.of("weir-peers.weir.svc"), Duration.ofSeconds(5)),
            self,
            host -> {
              if (!resolves.get()) {
                throw new UnknownHostException(host + ": Name or service not known");
              }
              return List.of(InetAddress.getByName("127.0.0.1"));
            },
            polls);
    member =
        Weir.builder()
            .advertiseAddress(self)
            .discovery(dns)
            .peerSecret("join-health-test-secret")
            .start();
    polls.advance(Duration.ofSeconds(30));
    HealthStatus beforeResolving = member.health();

    resolves.set(true);
    polls.advance(Duration.ofSeconds(5));
    HealthStatus firstCheckResolved = member.health();
    HealthStatus resolved = member.health();
    resolves.set(false);
    polls.advance(Duration.ofSeconds(5));
    HealthStatus failingAgain = member.health();

    assertThat(beforeResolving.healthy()).isFalse();
    assertThat(beforeResolving.peers()).containsExactly(self);
    assertThat(beforeResolving.message())
        .startsWith(DiscoveryComponent.WAITING_FOR_SOURCE + "|DNS lookup of weir-peers.weir.svc");
    assertThat(firstCheckResolved.healthy())
        .as("ready at the first check after a late source answered with this node alone: %s",
            firstCheckResolved.message())
        .isFalse();
    assertThat(resolved.healthy()).isTrue();
    assertThat(resolved.message()).isEmpty();
    assertThat(failingAgain.healthy()).isTrue();
    assertThat(failingAgain.message()).startsWith("DNS lookup of weir-peers.weir.svc failed");
  }
}
