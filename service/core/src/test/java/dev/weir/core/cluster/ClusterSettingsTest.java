package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.HostPort;
import dev.weir.ring.PeerHash;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ClusterSettingsTest {

  private static final List<String> TYPES = List.of("static");

  private static ClusterSettings read(Map<String, String> env) {
    return ClusterSettings.from(new EnvReader(env), TYPES);
  }

  @Test
  void from_nothingSet_defaults() {
    ClusterSettings s = read(Map.of());
    assertThat(s).isEqualTo(ClusterSettings.defaults());
    assertThat(s.replicas()).isEqualTo(4096);
    assertThat(s.hash()).isEqualTo(PeerHash.FNV1A_FMIX64);
    assertThat(s.batchLimit()).isEqualTo(1000);
    assertThat(s.batchWait()).isEqualTo(Duration.ofNanos(500_000));
    assertThat(s.batchTimeout()).isEqualTo(Duration.ofMillis(500));
    assertThat(s.globalSyncWait()).isEqualTo(Duration.ofMillis(100));
    assertThat(s.globalBatchLimit()).isEqualTo(1000);
    assertThat(s.globalTimeout()).isEqualTo(Duration.ofMillis(500));
    assertThat(s.staticPeers()).isEmpty();
    assertThat(s.handoff()).isTrue();
    assertThat(s.peerFailureMode()).isEqualTo(PeerFailureMode.REROUTE);
  }

  @Test
  void from_everyVariableSet_read() {
    ClusterSettings s =
        read(
            Map.ofEntries(
                Map.entry("WEIR_REPLICATED_HASH_REPLICAS", "64"),
                Map.entry("WEIR_PEER_PICKER_HASH", "fnv1"),
                Map.entry("WEIR_BATCH_LIMIT", "50"),
                Map.entry("WEIR_BATCH_WAIT", "2ms"),
                Map.entry("WEIR_BATCH_TIMEOUT", "1s"),
                Map.entry("WEIR_DISABLE_BATCHING", "true"),
                Map.entry("WEIR_GLOBAL_SYNC_WAIT", "250ms"),
                Map.entry("WEIR_GLOBAL_BATCH_LIMIT", "10"),
                Map.entry("WEIR_GLOBAL_TIMEOUT", "2s"),
                Map.entry("WEIR_PEER_DISCOVERY_TYPE", "STATIC"),
                Map.entry("WEIR_STATIC_PEERS", " 10.0.0.1:1051, 10.0.0.2:1051 ,"),
                Map.entry("WEIR_HANDOFF", "false"),
                Map.entry("WEIR_PEER_FAILURE_MODE", "Fail")));
    assertThat(s)
        .isEqualTo(
            new ClusterSettings(
                64, PeerHash.FNV1, 50, Duration.ofMillis(2), Duration.ofSeconds(1), true,
                Duration.ofMillis(250), 10, Duration.ofSeconds(2), "static",
                List.of("10.0.0.1:1051", "10.0.0.2:1051"), false, PeerFailureMode.FAIL));
  }

  @Test
  void from_guberAliases_read() {
    ClusterSettings s =
        read(Map.of("GUBER_BATCH_WAIT", "500us", "GUBER_REPLICATED_HASH_REPLICAS", "128"));
    assertThat(s.batchWait()).isEqualTo(Duration.ofNanos(500_000));
    assertThat(s.replicas()).isEqualTo(128);
  }

  @Test
  void from_gubernatorExampleConfWaitsInNanoseconds_read() {
    ClusterSettings s =
        read(Map.of("GUBER_BATCH_WAIT", "500ns", "GUBER_GLOBAL_SYNC_WAIT", "500ns"));
    assertThat(s.batchWait()).isEqualTo(Duration.ofNanos(500));
    assertThat(s.globalSyncWait()).isEqualTo(Duration.ofNanos(500));
  }

  @Test
  void from_zeroWait_errorNamesVariableValueAndRange() {
    assertThatThrownBy(() -> read(Map.of("WEIR_GLOBAL_SYNC_WAIT", "0s")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_GLOBAL_SYNC_WAIT='0s'")
        .hasMessageContaining("from 1ns to 1m");
  }

  @Test
  void from_gubernatorRing_readFromEitherName() {
    ClusterSettings weir =
        read(Map.of("WEIR_PEER_PICKER_HASH", "fnv1a", "WEIR_REPLICATED_HASH_REPLICAS", "512"));
    ClusterSettings guber =
        read(Map.of("GUBER_PEER_PICKER_HASH", "FNV1A", "GUBER_REPLICATED_HASH_REPLICAS", "512"));
    assertThat(weir.hash()).isEqualTo(PeerHash.FNV1A).isEqualTo(guber.hash());
    assertThat(weir.replicas()).isEqualTo(512).isEqualTo(guber.replicas());
    assertThat(read(Map.of("WEIR_PEER_PICKER_HASH", "fnv1a-fmix64")).hash())
        .isEqualTo(PeerHash.FNV1A_FMIX64);
  }

  @Test
  void from_batchLimitAbove1000_errorNamesVariableValueAndRange() {
    assertThatThrownBy(() -> read(Map.of("GUBER_BATCH_LIMIT", "5000")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("GUBER_BATCH_LIMIT")
        .hasMessageContaining("5000")
        .hasMessageContaining("1 to 1000");
  }

  @Test
  void from_unknownHash_errorListsAllowed() {
    assertThatThrownBy(() -> read(Map.of("WEIR_PEER_PICKER_HASH", "crc32")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_PEER_PICKER_HASH")
        .hasMessageContaining("crc32")
        .hasMessageContaining("fnv1a-fmix64, fnv1a, fnv1");
  }

  @Test
  void from_unknownPeerFailureMode_errorNamesVariableValueAndModes() {
    assertThatThrownBy(() -> read(Map.of("WEIR_PEER_FAILURE_MODE", "retry")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_PEER_FAILURE_MODE")
        .hasMessageContaining("retry")
        .hasMessageContaining("reroute, fail");
  }

  @Test
  void from_unknownDiscovery_errorListsOffered() {
    assertThatThrownBy(() -> read(Map.of("WEIR_PEER_DISCOVERY_TYPE", "member-list")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("member-list")
        .hasMessageContaining("static");
  }

  @Test
  void from_staticPeersNotSeparatedByCommas_errorNamesVariableEntryAndSeparator() {
    assertThatThrownBy(() -> read(Map.of("WEIR_STATIC_PEERS", "a:1;b:2")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_STATIC_PEERS='a:1;b:2' is not valid: static peer 'a:1;b:2' is not host:port or"
                + " host:port@peerPort: it holds ';'; separate entries with commas");
    assertThatThrownBy(() -> read(Map.of("WEIR_STATIC_PEERS", "a:1 b:2")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("static peer 'a:1 b:2'")
        .hasMessageContaining("separate entries with commas");
  }

  @Test
  void from_staticPeerHostGrpcRefuses_errorNamesVariableEntryAndWhatIsAllowed() {
    assertThatThrownBy(() -> read(Map.of("WEIR_STATIC_PEERS", "weir_1:1051,weir-2:1051")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_STATIC_PEERS='weir_1:1051,weir-2:1051' is not valid: static peer 'weir_1:1051'"
                + " is not host:port or host:port@peerPort: host 'weir_1' is refused by gRPC; give "
                + HostPort.GRPC_HOSTS);
  }

  @Test
  void from_staticPeerWithScheme_errorNamesEntryAndScheme() {
    assertThatThrownBy(() -> read(Map.of("WEIR_STATIC_PEERS", "a:1,http://b:2")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_STATIC_PEERS='a:1,http://b:2' is not valid: static peer 'http://b:2' is not"
                + " host:port or host:port@peerPort: write host:port without a scheme such as"
                + " 'http://'");
  }

  @Test
  void from_badDuration_errorNamesVariable() {
    assertThatThrownBy(() -> read(Map.of("WEIR_GLOBAL_SYNC_WAIT", "soon")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_GLOBAL_SYNC_WAIT")
        .hasMessageContaining("soon");
  }

  @Test
  void withers_changeTheirComponentAndKeepEveryOther() {
    ClusterSettings base =
        read(Map.of("WEIR_REPLICATED_HASH_REPLICAS", "7", "WEIR_GLOBAL_BATCH_LIMIT", "9"))
            .withStandInAfter(Duration.ofMillis(3));

    ClusterSettings changed =
        base.withStaticPeers(List.of("a:1"))
            .withHandoff(false)
            .withDisableBatching(true)
            .withPeerFailureMode(PeerFailureMode.FAIL)
            .withSnapshotDir(Optional.of(Path.of("/snap")));

    assertThat(changed)
        .isEqualTo(
            new ClusterSettings(
                7,
                base.hash(),
                base.batchLimit(),
                base.batchWait(),
                base.batchTimeout(),
                true,
                base.globalSyncWait(),
                9,
                base.globalTimeout(),
                base.discoveryType(),
                List.of("a:1"),
                false,
                PeerFailureMode.FAIL,
                Duration.ofMillis(3),
                Optional.of(Path.of("/snap"))));
    assertThat(base.toBuilder().build()).isEqualTo(base);
  }

  @Test
  void builder_batchLimitOutOfRange_errorNamesComponentValueAndRange() {
    assertThatThrownBy(() -> ClusterSettings.defaults().toBuilder().batchLimit(1001).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("batchLimit must be within 1..1000, got 1001");
    assertThatThrownBy(() -> ClusterSettings.defaults().toBuilder().globalBatchLimit(0).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("globalBatchLimit must be within 1..1000, got 0");
  }
}
