package dev.weir.core.discovery.dns;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.discovery.DiscoveryEnv;
import dev.weir.core.discovery.ManualScheduler;
import dev.weir.core.discovery.RecordingListener;
import dev.weir.core.testkit.RecordingMetrics;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class DnsDiscoveryTest {
  private static final Duration POLL = Duration.ofSeconds(5);

  private final Map<String, List<InetAddress>> records = new HashMap<>();
  private final Resolver fake =
      host -> {
        List<InetAddress> found = records.get(host);
        if (found == null) {
          throw new UnknownHostException(host + ": Name or service not known");
        }
        return found;
      };
  private final ManualScheduler scheduler = new ManualScheduler();
  private final RecordingListener peers = new RecordingListener();
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final DnsDiscovery discovery =
      new DnsDiscovery(
          new DnsSettings(List.of("weir-peers.weir.svc"), POLL), "10.0.0.1:1051", fake, scheduler, metrics);

  @Test
  void start_resolvesAtOnce_peersAreAddressesWithOwnPortPlusSelf() throws Exception {
    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.2"), ip("fd00::3")));

    discovery.start(peers);

    assertThat(peers.received()).containsExactly(Set.of("10.0.0.1:1051", "10.0.0.2:1051", "[fd00::3]:1051"));
    assertThat(discovery.problem()).isEmpty();
  }

  @Test
  void start_ipv6Cluster_eachMemberSpelledAsItAdvertisesItself() throws Exception {
    DnsDiscovery v6 =
        new DnsDiscovery(
            new DnsSettings(List.of("weir-peers.weir.svc"), POLL),
            "[fd00::1]:1051",
            fake,
            scheduler,
            metrics);
    records.put(
        "weir-peers.weir.svc",
        List.of(ip("fd00:0:0:0:0:0:0:1"), ip("FD00::3"), ip("2001:db8:0:0:1:0:0:1")));

    v6.start(peers);

    assertThat(peers.last())
        .as("this node once, as it advertises itself; RFC 5952 text for the others")
        .containsExactlyInAnyOrder("[fd00::1]:1051", "[fd00::3]:1051", "[2001:db8::1:0:0:1]:1051");
  }

  @Test
  void poll_recordsChange_deliveredOnNextPollOnly() throws Exception {
    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.1"), ip("10.0.0.2")));
    discovery.start(peers);
    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.1"), ip("10.0.0.3")));

    scheduler.advance(POLL.minusMillis(1));
    assertThat(peers.last()).isEqualTo(Set.of("10.0.0.1:1051", "10.0.0.2:1051"));

    scheduler.advance(Duration.ofMillis(1));
    assertThat(peers.last()).isEqualTo(Set.of("10.0.0.1:1051", "10.0.0.3:1051"));
    assertThat(peers.received()).hasSize(2);
  }

  @Test
  void poll_lookupFailsOrEmpty_keepsLastPeersAndReportsThenRecovers() throws Exception {
    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.2")));
    discovery.start(peers);

    records.remove("weir-peers.weir.svc");
    scheduler.advance(POLL);

    assertThat(peers.received()).hasSize(1);
    assertThat(discovery.problem())
        .isEqualTo("DNS lookup of weir-peers.weir.svc failed (UnknownHostException: weir-peers.weir.svc: "
            + "Name or service not known); keeping the last 2 known peers");

    records.put("weir-peers.weir.svc", List.of());
    scheduler.advance(POLL);
    assertThat(discovery.problem()).contains("no A or AAAA records");
    assertThat(peers.received()).hasSize(1);

    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.4")));
    scheduler.advance(POLL);
    assertThat(discovery.problem()).isEmpty();
    assertThat(peers.last()).isEqualTo(Set.of("10.0.0.1:1051", "10.0.0.4:1051"));
  }

  @Test
  void poll_eachFailedOrEmptyLookup_countsOneDnsErrorAndSuccessCountsNone() throws Exception {
    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.2")));
    discovery.start(peers);
    scheduler.advance(POLL);
    assertThat(metrics.events()).isEmpty();

    records.remove("weir-peers.weir.svc");
    scheduler.advance(POLL.multipliedBy(2));
    assertThat(metrics.events()).containsExactly("discovery error dns", "discovery error dns");

    records.put("weir-peers.weir.svc", List.of());
    scheduler.advance(POLL);
    assertThat(metrics.count("discovery error dns")).isEqualTo(3);

    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.4")));
    scheduler.advance(POLL.multipliedBy(2));
    assertThat(metrics.events()).hasSize(3);
    assertThat(discovery.problem()).isEmpty();
  }

  @Test
  void poll_resolverThrowsUnchecked_countedKeepsPeersAndKeepsPolling() throws Exception {
    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.2")));
    boolean[] broken = {false};
    DnsDiscovery d =
        new DnsDiscovery(
            new DnsSettings(List.of("weir-peers.weir.svc"), POLL),
            "10.0.0.1:1051",
            host -> {
              if (broken[0]) {
                throw new IllegalStateException("resolver closed");
              }
              return fake.resolve(host);
            },
            scheduler,
            metrics);
    d.start(peers);

    broken[0] = true;
    scheduler.advance(POLL);

    assertThat(metrics.events()).containsExactly("discovery error dns");
    assertThat(d.problem()).contains("IllegalStateException: resolver closed");
    assertThat(peers.last()).isEqualTo(Set.of("10.0.0.1:1051", "10.0.0.2:1051"));

    broken[0] = false;
    scheduler.advance(POLL);
    assertThat(d.problem()).isEmpty();
    assertThat(metrics.events()).hasSize(1);
  }

  @Test
  void poll_secondOfTwoNamesFails_countsOnePerPoll() throws Exception {
    records.put("a.svc", List.of(ip("10.0.0.2")));
    DnsDiscovery d =
        new DnsDiscovery(new DnsSettings(List.of("a.svc", "b.svc"), POLL), "10.0.0.1:1051", fake, scheduler, metrics);

    d.start(peers);
    scheduler.advance(POLL);

    assertThat(metrics.events()).containsExactly("discovery error dns", "discovery error dns");
    assertThat(d.problem()).startsWith("DNS lookup of b.svc failed");
  }

  @Test
  void start_firstLookupFails_deliversSelfAlone() {
    discovery.start(peers);

    assertThat(peers.received()).containsExactly(Set.of("10.0.0.1:1051"));
    assertThat(discovery.problem()).startsWith("DNS lookup of weir-peers.weir.svc failed");
    assertThat(metrics.events()).containsExactly("discovery error dns");
  }

  @Test
  void poll_lookupSucceedsAfterFailingSinceStart_problemClearsOnlyOnceItsPeersAreDelivered()
      throws Exception {
    List<String> problemAtDelivery = new ArrayList<>();
    discovery.start(set -> problemAtDelivery.add(discovery.problem()));
    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.2")));

    scheduler.advance(POLL);

    assertThat(problemAtDelivery)
        .as("the problem each set was delivered with: the failed lookup's, then still the failed lookup's")
        .hasSize(2)
        .allSatisfy(problem -> assertThat(problem).startsWith("DNS lookup of weir-peers.weir.svc failed"));
    assertThat(discovery.problem()).isEmpty();
  }

  @Test
  void close_stopsPolling() throws Exception {
    discovery.start(peers);
    discovery.close();
    records.put("weir-peers.weir.svc", List.of(ip("10.0.0.2")));
    scheduler.advance(POLL.multipliedBy(3));

    assertThat(peers.received()).hasSize(1);
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void settings_fromEnv_defaultsAndErrors() {
    DnsSettings s = DnsSettings.fromEnv(new DiscoveryEnv(Map.of("GUBER_DNS_FQDN", "a.svc,b.svc")));
    assertThat(s.fqdns()).containsExactly("a.svc", "b.svc");
    assertThat(s.pollInterval()).isEqualTo(Duration.ofSeconds(5));

    assertThatThrownBy(() -> DnsSettings.fromEnv(new DiscoveryEnv(Map.of())))
        .hasMessageStartingWith("WEIR_DNS_FQDN='' is not valid: expected a host name");
  }

  @Test
  void settings_fromEnv_entryThatIsNoHostName_errorNamesEntryAndProblem() {
    assertThatThrownBy(() -> DnsSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_DNS_FQDN", "a.svc;b.svc"))))
        .hasMessage(
            "WEIR_DNS_FQDN='a.svc;b.svc' is not valid: expected comma-separated host names such as"
                + " weir-peers.weir.svc.cluster.local, without port or scheme (entry 'a.svc;b.svc'"
                + " holds ';'; separate entries with commas)");
    assertThatThrownBy(() -> DnsSettings.fromEnv(new DiscoveryEnv(Map.of("GUBER_DNS_FQDN", "a.svc:1051"))))
        .hasMessageContaining("GUBER_DNS_FQDN='a.svc:1051'")
        .hasMessageContaining("(entry 'a.svc:1051' holds ':')");
    assertThat(DnsSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_DNS_FQDN", "weir_peers.weir.svc.cluster.local."))).fqdns())
        .containsExactly("weir_peers.weir.svc.cluster.local.");
  }

  private static InetAddress ip(String literal) throws UnknownHostException {
    return InetAddress.getByName(literal);
  }
}
