package dev.weir.core.cluster.ring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.config.EnvReader;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class HashRingTest {

  private static final List<String> PEERS =
      List.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051", "10.0.0.4:1051", "10.0.0.5:1051");

  private static List<String> keys(int n) {
    List<String> keys = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      keys.add("requests_per_second_account:" + i);
    }
    return keys;
  }

  @Test
  void fnv1a_knownVectors_matchReference() {
    assertThat(PeerHash.FNV1A.hash("")).isEqualTo(0xcbf29ce484222325L);
    assertThat(PeerHash.FNV1A.hash("a")).isEqualTo(0xaf63dc4c8601ec8cL);
    assertThat(PeerHash.FNV1A.hash("foobar")).isEqualTo(0x85944171f73967e8L);
    assertThat(PeerHash.FNV1.hash("a")).isEqualTo(0xaf63bd4c8601b7beL);
    assertThat(PeerHash.FNV1.hash("foobar")).isEqualTo(0x340d8765a4dda9c2L);
  }

  @Test
  void fnv1aFmix64_knownVectors_matchReference() {
    // FNV-1a, then MurmurHash3's fmix64 (computed independently, with Python integers).
    assertThat(PeerHash.FNV1A_FMIX64.hash("")).isEqualTo(0xefd01f60ba992926L);
    assertThat(PeerHash.FNV1A_FMIX64.hash("a")).isEqualTo(0x82a2a958a9bece5bL);
    assertThat(PeerHash.FNV1A_FMIX64.hash("foobar")).isEqualTo(0x2c22194922d1672bL);
    assertThat(PeerHash.FNV1A_FMIX64.hash("requests_per_second_account:12345"))
        .isEqualTo(0x824002550b218f3dL);
  }

  @Test
  void parse_unknownName_errorNamesValueAndAllowed() {
    assertThat(PeerHash.parse("FNV1")).isEqualTo(PeerHash.FNV1);
    assertThat(PeerHash.parse(" Fnv1a-Fmix64 ")).isEqualTo(PeerHash.FNV1A_FMIX64);
    assertThatThrownBy(() -> PeerHash.parse("crc32"))
        .hasMessage("unknown peer picker hash 'crc32'; allowed: fnv1a-fmix64, fnv1a, fnv1");
  }

  /**
   * Pins the owners the default ring and Gubernator's ring give: nodes of different builds agree
   * only while these hold; a change here needs the ring-switch procedure of docs/cluster.md.
   */
  @Test
  void ownerOf_defaultAndGubernatorRings_ownersPinned() {
    List<String> peers = List.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051");
    ClusterSettings d = ClusterSettings.defaults();
    HashRing weir = HashRing.of(peers, d.replicas(), d.hash());
    HashRing gubernator = HashRing.of(peers, 512, PeerHash.FNV1A);
    StringBuilder weirOwners = new StringBuilder();
    StringBuilder gubernatorOwners = new StringBuilder();
    for (int i = 0; i < 6; i++) {
      weirOwners.append(weir.ownerOf("requests_per_second_account:" + i).charAt(7));
      gubernatorOwners.append(gubernator.ownerOf("requests_per_second_account:" + i).charAt(7));
    }
    assertThat(weirOwners).hasToString("122233");
    assertThat(gubernatorOwners).hasToString("222222");
  }

  @Test
  void ownerOf_nodesReadingTheSameSettingsDifferently_agree() {
    ClusterSettings one = ClusterSettings.from(new EnvReader(Map.of()), List.of("static"));
    Map<String, String> explicit =
        Map.of("GUBER_PEER_PICKER_HASH", "FNV1A-FMIX64", "GUBER_REPLICATED_HASH_REPLICAS", "4096");
    ClusterSettings two = ClusterSettings.from(new EnvReader(explicit), List.of("static"));
    List<String> reversed = new ArrayList<>(PEERS);
    Collections.reverse(reversed);
    HashRing a = HashRing.of(PEERS, one.replicas(), one.hash());
    HashRing b = HashRing.of(reversed, two.replicas(), two.hash());
    for (String key : keys(20_000)) {
      assertThat(b.ownerOf(key)).as(key).isEqualTo(a.ownerOf(key));
    }
  }

  @Test
  void ownerOf_peersInAnyOrder_sameOwners() {
    HashRing sorted = HashRing.of(PEERS, 512, PeerHash.FNV1A);
    List<String> shuffled = new ArrayList<>(PEERS);
    Collections.shuffle(shuffled, new Random(7));
    HashRing other = HashRing.of(shuffled, 512, PeerHash.FNV1A);
    for (String key : keys(5000)) {
      assertThat(other.ownerOf(key)).as(key).isEqualTo(sorted.ownerOf(key));
    }
  }

  @Test
  void ownerOf_singlePeer_ownsEveryKey() {
    HashRing ring = HashRing.of(List.of("127.0.0.1:1051"), 512, PeerHash.FNV1A);
    assertThat(keys(1000)).allSatisfy(k -> assertThat(ring.ownerOf(k)).isEqualTo("127.0.0.1:1051"));
  }

  @Test
  void ownerOf_emptyRing_failsLikeGubernator() {
    HashRing ring = HashRing.of(List.of(), 512, PeerHash.FNV1A);
    assertThat(ring.isEmpty()).isTrue();
    assertThatThrownBy(() -> ring.ownerOf("a_b"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("unable to pick a peer; pool is empty");
  }

  @Test
  void ownerOf_manyKeys_spreadOverEveryPeer() {
    HashRing ring = HashRing.of(PEERS, 512, PeerHash.FNV1A);
    Map<String, Integer> counts = new HashMap<>();
    List<String> keys = keys(50_000);
    keys.forEach(k -> counts.merge(ring.ownerOf(k), 1, Integer::sum));
    assertThat(counts).containsOnlyKeys(PEERS);
    // 512 replicas keep each share within 0.6x..1.4x of fair (10 000 each).
    assertThat(counts.values()).allSatisfy(c -> assertThat(c).isBetween(6_000, 14_000));
  }

  @Test
  void ownerOf_peerJoins_aboutOneNthOfKeysMoveAllToNewPeer() {
    HashRing before = HashRing.of(PEERS, 512, PeerHash.FNV1A);
    HashRing after = before.withPeers(concat(PEERS, "10.0.0.6:1051"));
    List<String> keys = keys(60_000);
    int moved = 0;
    for (String key : keys) {
      String was = before.ownerOf(key);
      String now = after.ownerOf(key);
      if (!was.equals(now)) {
        moved++;
        assertThat(now).as("a moved key goes to the new peer").isEqualTo("10.0.0.6:1051");
      }
    }
    // Fair share is 1/6 = 10 000 keys.
    assertThat(moved).isBetween(7_000, 13_000);
  }

  @Test
  void without_peerLeaves_onlyItsKeysMove() {
    HashRing before = HashRing.of(PEERS, 512, PeerHash.FNV1);
    HashRing after = before.without("10.0.0.3:1051");
    assertThat(after.peers()).doesNotContain("10.0.0.3:1051").hasSize(4);
    for (String key : keys(20_000)) {
      if (!before.ownerOf(key).equals("10.0.0.3:1051")) {
        assertThat(after.ownerOf(key)).isEqualTo(before.ownerOf(key));
      }
    }
  }

  @Test
  void of_duplicatePeers_countedOnce() {
    HashRing ring = HashRing.of(List.of("a:1", "b:1", "a:1"), 16, PeerHash.FNV1A);
    assertThat(ring.peers()).containsExactly("a:1", "b:1");
    assertThat(ring.contains("a:1")).isTrue();
    assertThat(ring.contains("c:1")).isFalse();
  }

  @Test
  void of_zeroReplicas_rejected() {
    assertThatThrownBy(() -> HashRing.of(PEERS, 0, PeerHash.FNV1A))
        .hasMessageContaining("replicas must be at least 1");
  }

  private static List<String> concat(List<String> list, String extra) {
    List<String> out = new ArrayList<>(list);
    out.add(extra);
    return out;
  }

  @Test
  void shares_fivePeers_addUpToOneAndMatchTheKeysEachOwns() {
    HashRing ring = HashRing.of(PEERS, 512, PeerHash.FNV1A);
    Map<String, Integer> owned = new HashMap<>();
    List<String> keys = keys(200_000);
    for (String key : keys) {
      owned.merge(ring.ownerOf(key), 1, Integer::sum);
    }

    Map<String, Double> shares = ring.shares();

    assertThat(shares.keySet()).containsExactlyElementsOf(PEERS);
    assertThat(shares.values().stream().mapToDouble(Double::doubleValue).sum())
        .isCloseTo(1.0, within(1e-9));
    for (String peer : PEERS) {
      assertThat(shares.get(peer))
          .as(peer)
          .isCloseTo(owned.get(peer) / (double) keys.size(), within(0.01));
    }
  }

  @Test
  void shares_lonePeerOwnsAll_emptyRingNone() {
    assertThat(HashRing.of(List.of("a:1"), 512, PeerHash.FNV1A).shares())
        .containsExactly(Map.entry("a:1", 1.0));
    assertThat(HashRing.of(List.of(), 512, PeerHash.FNV1A).shares()).isEmpty();
  }
}
