package dev.weir.core.cluster.ring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.function.IntFunction;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * How evenly the ring spreads realistic keys: for each key set and cluster, the busiest node's
 * share of the keys divided by the mean share. Prints the table of docs/benchmarks.md's "Ring
 * balance".
 */
class RingBalanceTest {

  private static final int KEYS = 100_000;
  private static final int[] NODES = {3, 10, 50};
  private static final double MOST_BUSY = 1.10;

  /** A set of hash keys ({@code name + "_" + unique_key}) of one kind. */
  private record KeySet(String label, List<String> keys) {}

  /** A way of naming a cluster's nodes. */
  private record Addresses(String label, IntFunction<String> node) {

    List<String> of(int n) {
      List<String> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        out.add(node.apply(i));
      }
      return out;
    }
  }

  private static final List<KeySet> KEY_SETS =
      List.of(sequentialIds(), ipv4(), uuids(), envoyDescriptors());

  private static final List<Addresses> ADDRESSES =
      List.of(
          new Addresses("pod IPs 10.0.0.N:1051", i -> "10.0.0." + (i + 1) + ":1051"),
          new Addresses("names weir-N.weir.ns.svc:1051", i -> "weir-" + i + ".weir.ns.svc:1051"));

  private static KeySet sequentialIds() {
    List<String> keys = new ArrayList<>(KEYS);
    for (int i = 0; i < KEYS; i++) {
      keys.add("requests_per_second_account:" + (100_000 + i));
    }
    return new KeySet("sequential ids `account:100000`...", keys);
  }

  private static KeySet ipv4() {
    String[] prefixes = {"10.1.", "10.2.", "172.16.", "192.168."};
    List<String> keys = new ArrayList<>(KEYS);
    for (int i = 0; i < KEYS; i++) {
      int host = i / prefixes.length;
      keys.add("per_ip_" + prefixes[i % prefixes.length] + (host >> 8) + "." + (host & 0xff));
    }
    return new KeySet("IPv4 addresses in four /16s", keys);
  }

  private static KeySet uuids() {
    Random random = new Random(42);
    List<String> keys = new ArrayList<>(KEYS);
    for (int i = 0; i < KEYS; i++) {
      keys.add("api_calls_" + new UUID(random.nextLong(), random.nextLong()));
    }
    return new KeySet("random UUIDs", keys);
  }

  /**
   * Returns the counters of descriptor {@code (remote_address, <ip>)} of domain {@code apigw} as
   * the envoy adapter names them (CounterNames, CounterKeys): name {@code
   * envoy:5:apigw/14:remote_address}, unique key {@code 14:remote_address=<length>:<ip>}, for
   * client addresses in 100.64.0.0/10.
   */
  private static KeySet envoyDescriptors() {
    List<String> keys = new ArrayList<>(KEYS);
    for (int i = 0; i < KEYS; i++) {
      String ip = "100." + (64 + (i >> 16)) + "." + ((i >> 8) & 0xff) + "." + (i & 0xff);
      keys.add("envoy:5:apigw/14:remote_address_14:remote_address=" + ip.length() + ":" + ip);
    }
    return new KeySet("Envoy `remote_address` descriptors", keys);
  }

  /** Returns the busiest node's share of {@code keys} on {@code ring} over the mean share. */
  private static double busiestOverMean(HashRing ring, List<String> keys) {
    Map<String, Integer> counts = new HashMap<>();
    for (String key : keys) {
      counts.merge(ring.ownerOf(key), 1, Integer::sum);
    }
    int busiest = counts.values().stream().mapToInt(Integer::intValue).max().orElseThrow();
    return busiest / ((double) keys.size() / ring.peers().size());
  }

  private static double[][] measure(int replicas, PeerHash hash) {
    double[][] out = new double[KEY_SETS.size() * ADDRESSES.size()][NODES.length];
    for (int a = 0; a < ADDRESSES.size(); a++) {
      for (int n = 0; n < NODES.length; n++) {
        HashRing ring = HashRing.of(ADDRESSES.get(a).of(NODES[n]), replicas, hash);
        for (int k = 0; k < KEY_SETS.size(); k++) {
          out[a * KEY_SETS.size() + k][n] = busiestOverMean(ring, KEY_SETS.get(k).keys());
        }
      }
    }
    return out;
  }

  @Test
  void ownerOf_realisticKeys_busiestNodeWithin1_1xOfMeanWithTheDefaultRing() {
    ClusterSettings defaults = ClusterSettings.defaults();
    double[][] old = measure(512, PeerHash.FNV1A);
    double[][] now = measure(defaults.replicas(), defaults.hash());
    printTable(old, now, defaults);

    SoftAssertions softly = new SoftAssertions();
    for (int row = 0; row < now.length; row++) {
      for (int n = 0; n < NODES.length; n++) {
        softly
            .assertThat(now[row][n])
            .as("busiest over mean, %s, %d nodes", rowLabel(row), NODES[n])
            .isLessThanOrEqualTo(MOST_BUSY);
      }
    }
    softly.assertAll();
  }

  @Test
  void ownerOf_fnv1a512_fiftyNodes_busiestAbove1_1xOfMean() {
    double[][] old = measure(512, PeerHash.FNV1A);
    double worstAtFifty = 0;
    for (double[] row : old) {
      worstAtFifty = Math.max(worstAtFifty, row[NODES.length - 1]);
    }
    assertThat(worstAtFifty).isGreaterThan(MOST_BUSY);
  }

  @Test
  void ownerOf_fnv1a_consecutiveIdsShareAnOwner_fnv1aFmix64_spreadsThem() {
    List<String> peers = List.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051");
    HashRing fnv1a = HashRing.of(peers, 512, PeerHash.FNV1A);
    HashRing mixed = HashRing.of(peers, 512, PeerHash.FNV1A_FMIX64);
    List<String> fnv1aOwners = new ArrayList<>();
    List<String> mixedOwners = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      fnv1aOwners.add(fnv1a.ownerOf("requests_per_second_account:" + i));
      mixedOwners.add(mixed.ownerOf("requests_per_second_account:" + i));
    }
    assertThat(fnv1aOwners).containsOnly("10.0.0.2:1051");
    assertThat(mixedOwners).containsAll(peers);
  }

  private static String rowLabel(int row) {
    return KEY_SETS.get(row % KEY_SETS.size()).label()
        + ", "
        + ADDRESSES.get(row / KEY_SETS.size()).label();
  }

  private static void printTable(double[][] old, double[][] now, ClusterSettings defaults) {
    StringBuilder out =
        new StringBuilder("Ring balance: busiest node's keys / mean, ")
            .append(KEYS)
            .append(" keys per set; FNV-1a x 512 (before) -> ")
            .append(defaults.hash().settingName())
            .append(" x ")
            .append(defaults.replicas())
            .append('\n')
            .append("| key set | nodes named |");
    for (int n : NODES) {
      out.append(' ').append(n).append(" nodes |");
    }
    out.append('\n').append("|---|---|");
    for (int n = 0; n < NODES.length; n++) {
      out.append("---|");
    }
    for (int row = 0; row < now.length; row++) {
      out.append('\n')
          .append("| ")
          .append(KEY_SETS.get(row % KEY_SETS.size()).label())
          .append(" | ")
          .append(ADDRESSES.get(row / KEY_SETS.size()).label())
          .append(" |");
      for (int n = 0; n < NODES.length; n++) {
        out.append(String.format(" %.3f → %.3f |", old[row][n], now[row][n]));
      }
    }
    System.out.println(out);
  }
}
