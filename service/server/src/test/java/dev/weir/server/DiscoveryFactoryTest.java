package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.discovery.CoalescedDiscovery;
import dev.weir.core.discovery.ManualScheduler;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.RecordingListener;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.discovery.dns.DnsDiscovery;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.discovery.etcd.EtcdDiscovery;
import dev.weir.discovery.kubernetes.KubernetesDiscovery;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class DiscoveryFactoryTest {
  private final ManualScheduler scheduler = new ManualScheduler();

  /** A hand-written static discovery: delivers the peers it is given, then whatever the test pushes. */
  private static final class FakeStatic implements PeerDiscovery {
    final Set<String> peers;
    Consumer<Set<String>> listener;

    FakeStatic(Set<String> peers) {
      this.peers = peers;
    }

    @Override
    public void start(Consumer<Set<String>> listener) {
      this.listener = listener;
      listener.accept(peers);
    }

    @Override
    public void close() {}
  }

  private FakeStatic lastStatic;
  private final DiscoveryFactory factory =
      new DiscoveryFactory(
          self -> lastStatic = new FakeStatic(Set.of(self, "b:1051")),
          scheduler,
          host -> List.of(InetAddress.getByName("10.0.0.7")),
          Duration.ofMillis(250));

  @Test
  void create_default_staticFromClusterModuleWithAdvertiseAddress() throws Exception {
    CoalescedDiscovery d = factory.create(DiscoverySettings.fromEnv(Map.of(), "a:1051"), "a:1051");
    RecordingListener ring = new RecordingListener();

    d.start(ring);

    assertThat(d.delegate()).isSameAs(lastStatic);
    assertThat(ring.received()).containsExactly(Set.of("a:1051", "b:1051"));
  }

  @Test
  void create_anyMechanism_updatesCoalesced() throws Exception {
    CoalescedDiscovery d = factory.create(DiscoverySettings.staticPeers(), "a:1051");
    RecordingListener ring = new RecordingListener();
    d.start(ring);

    lastStatic.listener.accept(Set.of("a:1051"));
    lastStatic.listener.accept(Set.of("a:1051", "b:1051"));
    scheduler.advance(Duration.ofMillis(250));

    assertThat(ring.received()).hasSize(1);
  }

  @Test
  void create_eachType_buildsItsMechanism() throws Exception {
    try (CoalescedDiscovery etcd =
        factory.create(DiscoverySettings.fromEnv(Map.of("WEIR_PEER_DISCOVERY_TYPE", "etcd"), "a:1051"), "a:1051")) {
      assertThat(etcd.delegate()).isInstanceOf(EtcdDiscovery.class);
    }
    try (CoalescedDiscovery k8s =
        factory.create(
            DiscoverySettings.fromEnv(Map.of("GUBER_PEER_DISCOVERY_TYPE", "k8s", "WEIR_K8S_POD_IP", "10.1.2.3"), "0.0.0.0:1051"),
            "0.0.0.0:1051")) {
      assertThat(k8s.delegate()).isInstanceOf(KubernetesDiscovery.class);
      assertThat(((KubernetesDiscovery) k8s.delegate()).selfAddress()).isEqualTo("10.1.2.3:1051");
    }
    try (CoalescedDiscovery dns =
        factory.create(
            DiscoverySettings.fromEnv(Map.of("WEIR_PEER_DISCOVERY_TYPE", "DNS", "WEIR_DNS_FQDN", "weir-peers"), "a:1051"),
            "a:1051")) {
      assertThat(dns.delegate()).isInstanceOf(DnsDiscovery.class);
      RecordingListener ring = new RecordingListener();
      dns.start(ring);
      assertThat(ring.last()).isEqualTo(Set.of("a:1051", "10.0.0.7:1051"));
    }
  }

  @Test
  void create_withMetrics_mechanismCountsItsFailuresUnderItsLabel() throws Exception {
    RecordingMetrics metrics = new RecordingMetrics();
    DiscoveryFactory counting =
        new DiscoveryFactory(
            self -> new FakeStatic(Set.of(self)),
            scheduler,
            host -> {
              throw new UnknownHostException(host);
            },
            Duration.ofMillis(250),
            metrics);

    try (CoalescedDiscovery dns =
        counting.create(
            DiscoverySettings.fromEnv(Map.of("WEIR_PEER_DISCOVERY_TYPE", "dns", "WEIR_DNS_FQDN", "weir-peers"), "a:1051"),
            "a:1051")) {
      dns.start(new RecordingListener());
      scheduler.advance(Duration.ofSeconds(5));
    }

    assertThat(metrics.events()).containsExactly("discovery error dns", "discovery error dns");
  }

  @Test
  void create_withMetrics_healthGaugeIsZeroWhileTheMechanismReportsAProblem() throws Exception {
    RecordingMetrics metrics = new RecordingMetrics();
    AtomicBoolean resolves = new AtomicBoolean(false);
    DiscoveryFactory watching =
        new DiscoveryFactory(
            self -> new FakeStatic(Set.of(self)),
            scheduler,
            host -> {
              if (!resolves.get()) {
                throw new UnknownHostException(host);
              }
              return List.of(InetAddress.getByName("10.0.0.7"));
            },
            Duration.ofMillis(250),
            metrics);

    try (CoalescedDiscovery dns =
        watching.create(
            DiscoverySettings.fromEnv(Map.of("WEIR_PEER_DISCOVERY_TYPE", "dns", "WEIR_DNS_FQDN", "weir-peers"), "a:1051"),
            "a:1051")) {
      dns.start(new RecordingListener());
      assertThat(metrics.discoveryHealth("dns")).isEqualTo("0");

      resolves.set(true);
      scheduler.advance(Duration.ofSeconds(5));

      assertThat(metrics.discoveryHealth("dns")).isEqualTo("1");
    }
  }

  @Test
  void create_staticWithMetrics_noHealthGauge() throws Exception {
    RecordingMetrics metrics = new RecordingMetrics();
    DiscoveryFactory watching =
        new DiscoveryFactory(
            self -> new FakeStatic(Set.of(self)),
            scheduler,
            host -> List.of(),
            Duration.ofMillis(250),
            metrics);

    watching.create(DiscoverySettings.staticPeers(), "a:1051");

    assertThat(metrics.discoveryHealth("static")).isEqualTo("unwatched");
  }

  @Test
  void typeLabel_isTheConfiguredNameAndTheBackendsErrorLabel() {
    assertThat(DiscoverySettings.Type.ETCD.label()).isEqualTo("etcd").isEqualTo(EtcdDiscovery.MECHANISM);
    assertThat(DiscoverySettings.Type.K8S.label()).isEqualTo("k8s").isEqualTo(KubernetesDiscovery.MECHANISM);
    assertThat(DiscoverySettings.Type.DNS.label()).isEqualTo("dns").isEqualTo(DnsDiscovery.MECHANISM);
  }

  @Test
  void fromEnv_unknownType_oneLineNamingVariableValueAndAllowed() {
    assertThatThrownBy(() -> DiscoverySettings.fromEnv(Map.of("GUBER_PEER_DISCOVERY_TYPE", "member-list"), "a:1"))
        .isInstanceOf(ConfigException.class)
        .hasMessage("GUBER_PEER_DISCOVERY_TYPE='member-list' is not valid: expected one of static, etcd, k8s, dns");
  }

  @Test
  void advertiseAddress_etcdOverride_used() {
    DiscoverySettings s =
        DiscoverySettings.fromEnv(
            Map.of("WEIR_PEER_DISCOVERY_TYPE", "etcd", "WEIR_ETCD_ADVERTISE_ADDRESS", "10.9.9.9:1051"), "a:1051");

    assertThat(s.advertiseAddress("a:1051")).isEqualTo("10.9.9.9:1051");
    assertThat(DiscoverySettings.staticPeers().advertiseAddress("a:1051")).isEqualTo("a:1051");
  }
}
