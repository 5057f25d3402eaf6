package dev.weir.core.cluster;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerProber;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A model of hand-off under ring churn: 2 to 5 in-process nodes on fake time take hits on a few
 * keys while nodes join, leave gracefully, restart and crash in an order drawn from a fixed seed;
 * every change is applied and handed off before the next hit, unless a test spreads it. The model
 * is one count per key in the key's algorithm, with time standing still (no window ends, nothing
 * leaks), so every answer must be the model's: no admitted hit lost from the count, none counted
 * twice, no key admitting past its limit (a crashed node's keys: within cluster.md's bound). The
 * ring, and so which node owns a key, follows the nodes' ephemeral ports, so a seed fixes the
 * operations but not the owners: the log in a failure's message names each key's owner at the
 * start and after every change.
 */
class HandOffChurnModelTest {

  private static final int KEYS = 6;
  private static final long LIMIT = 10;
  private static final int STEPS = 40;
  private static final int MAX_NODES = 5;
  private static final List<String> KEY_NAMES =
      new Random(7).longs(KEYS).mapToObj(Long::toHexString).toList();

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @ParameterizedTest
  @CsvSource({"1, TOKEN_BUCKET", "2, LEAKY_BUCKET", "3, FIXED_WINDOW", "4, SLIDING_WINDOW"})
  void churn_announcedChangesAppliedEverywhere_everyAnswerIsTheModels(
      long seed, Algorithm algorithm) {
    Random random = new Random(seed);
    startCluster(3);
    long[] used = new long[KEYS];
    List<String> log = new ArrayList<>(List.of(owners()));

    for (int step = 0; step < STEPS; step++) {
      int op = random.nextInt(12);
      int size = cluster.nodes().size();
      if (op == 0 && size < MAX_NODES) {
        Node added = cluster.addNode();
        log.add("add " + added.address());
      } else if (op == 1 && size > 2) {
        Node leaving = cluster.node(random.nextInt(size));
        log.add("remove " + leaving.address());
        cluster.removeNode(leaving);
      } else if (op == 2) {
        Node old = cluster.node(random.nextInt(size));
        log.add("restart " + old.address());
        cluster.restart(old);
      } else {
        hit(cluster.node(random.nextInt(size)), random, algorithm, used, log);
        continue;
      }
      awaitHandOffs();
      log.add(owners());
      checkEveryKey(random, algorithm, used, log);
    }
  }

  /**
   * Churn as Kubernetes discovery makes it: a new pod joins (copying its counts) before its peers
   * list it, and the listing reaches some peers first; hits land anywhere meanwhile. While the
   * listing spreads a moved key may admit up to twice what was left at the copy; once every peer
   * lists it and the hand-offs ended, every hit admitted anywhere is in the new owner's count.
   */
  @ParameterizedTest
  @CsvSource({"11, TOKEN_BUCKET", "12, LEAKY_BUCKET", "13, FIXED_WINDOW", "14, SLIDING_WINDOW"})
  void churn_joinListedByPeersOneByOne_spreadAdmitsAtMostTwiceTheRestAndLosesNoHit(
      long seed, Algorithm algorithm) throws Exception {
    Random random = new Random(seed);
    startCluster(2);
    long[] used = new long[KEYS];
    List<String> log = new ArrayList<>(List.of(owners()));

    for (int step = 0; step < STEPS; step++) {
      int op = random.nextInt(8);
      int size = cluster.nodes().size();
      if (op == 0 && size < MAX_NODES) {
        spreadJoin(random, algorithm, used, log);
      } else if (op == 1 && size > 2) {
        Node leaving = cluster.node(random.nextInt(size));
        log.add("remove " + leaving.address());
        cluster.removeNode(leaving);
      } else {
        hit(cluster.node(random.nextInt(size)), random, algorithm, used, log);
        continue;
      }
      awaitHandOffs();
      log.add(owners());
      checkEveryKey(random, algorithm, used, log);
    }
  }

  /** Starts {@code nodes} nodes on a fake clock that never moves unless a test steps it. */
  private FakeScheduler startCluster(int nodes) {
    FakeClock clock = new FakeClock();
    FakeScheduler timers = new FakeScheduler(clock);
    cluster = LocalCluster.startInFakeTime(nodes, ClusterForwardingTest.SETTINGS, clock, timers);
    return timers;
  }

  private void spreadJoin(Random random, Algorithm algorithm, long[] used, List<String> log)
      throws Exception {
    Node fresh = cluster.startUnlisted();
    Set<String> withFresh = new TreeSet<>(Set.of(fresh.address()));
    cluster.nodes().forEach(n -> withFresh.add(n.address()));
    fresh.cluster().join(new StaticDiscovery(fresh.address(), List.copyOf(withFresh)));
    List<Node> early = new ArrayList<>(cluster.nodes());
    Collections.shuffle(early, random);
    early = early.subList(0, random.nextInt(early.size() + 1));
    early.forEach(n -> n.cluster().membership().accept(withFresh));
    log.add("join " + fresh.address() + ", listed first by " + addresses(early));
    log.add("at " + fresh.address() + " " + owners(fresh));
    List<Node> asked = new ArrayList<>(cluster.nodes());
    asked.add(fresh);
    long[] spread = new long[KEYS];
    long[] counted = new long[KEYS];
    for (int i = random.nextInt(12); i > 0; i--) {
      int key = random.nextInt(KEYS);
      long hits = 1 + random.nextInt(2);
      Node at = asked.get(random.nextInt(asked.size()));
      RateLimitResponse answer = at.check(req(algorithm, key, hits)).get(0);
      log.add("spread hit " + key + " x" + hits + " at " + at.address());
      assertThat(answer.error()).as("%s", log).isEmpty();
      if (answer.status() == Status.UNDER_LIMIT) {
        spread[key] += hits;
        counted[key] += hits;
      } else if (countsRefused(algorithm)) {
        counted[key] += hits;
      }
    }
    cluster.list(fresh);
    awaitHandOffs();
    for (int key = 0; key < KEYS; key++) {
      assertThat(spread[key])
          .as("admitted while the listing spread, key %d after %s", key, log)
          .isLessThanOrEqualTo(2 * remaining(used[key]));
      if (used[key] == 0 && counted[key] > 0) {
        // No node held the key at the copy: hits the joiner and a node not yet listing it took
        // each merge as the larger count, not their sum (cluster.md, hand-off).
        long now = LIMIT - fresh.check(req(algorithm, key, 0)).get(0).remaining();
        assertThat(now)
            .as("count of key %d, first hit while the listing spread, after %s", key, log)
            .isPositive()
            .isLessThanOrEqualTo(counted[key]);
        used[key] = now;
        continue;
      }
      used[key] += counted[key];
      if (!countsRefused(algorithm)) {
        used[key] = Math.min(LIMIT, used[key]);
      }
    }
  }

  /**
   * A crashing peer: a node crashes (no leave notice) and, once every other node found it down,
   * comes back at the same address with its buckets, again and again, while the others take hits.
   * Per cluster.md's peer failures ({@code reroute}), a key the down node owns is answered by its
   * next owner meanwhile and can admit up to one more limit per outage; once every node has it up
   * on its ring and the hand-offs ended its count holds at least what it held before the outage and
   * what was admitted during it. Every other key stays exact.
   */
  @ParameterizedTest
  @CsvSource({"21, TOKEN_BUCKET", "22, LEAKY_BUCKET", "23, FIXED_WINDOW", "24, SLIDING_WINDOW"})
  void churn_peerCrashesAndComesBack_onlyItsKeysOverAdmitAndAtMostOneLimitPerOutage(
      long seed, Algorithm algorithm) throws Exception {
    Random random = new Random(seed);
    FakeScheduler timers = startCluster(3);
    long[] used = new long[KEYS];
    long[] admitted = new long[KEYS];
    int[] outages = new int[KEYS];
    List<String> log = new ArrayList<>();

    for (int step = 0; step < STEPS; step++) {
      List<Node> nodes = cluster.nodes();
      if (random.nextInt(5) > 0) {
        int key = random.nextInt(KEYS);
        long hits = 1 + random.nextInt(2);
        if (hit(nodes.get(random.nextInt(nodes.size())), key, hits, algorithm, used, log)) {
          admitted[key] += hits;
        }
        continue;
      }
      Node down = nodes.get(random.nextInt(nodes.size()));
      List<Node> up = nodes.stream().filter(n -> n != down).toList();
      HashRing ring = down.cluster().membership().ring();
      boolean[] moved = new boolean[KEYS];
      long[] during = new long[KEYS];
      long[] before = used.clone();
      for (int key = 0; key < KEYS; key++) {
        moved[key] = ring.ownerOf(req(algorithm, key, 0).hashKey()).equals(down.address());
        outages[key] += moved[key] ? 1 : 0;
      }
      cluster.kill(down);
      log.add("crash " + down.address());
      awaitEverywhere(timers, up, down, false, log);
      for (int i = random.nextInt(20); i > 0; i--) {
        int key = random.nextInt(KEYS);
        long hits = 1 + random.nextInt(2);
        Node asked = up.get(random.nextInt(up.size()));
        RateLimitResponse answer = asked.check(req(algorithm, key, hits)).get(0);
        log.add("outage hit " + key + " x" + hits + " at " + asked.address());
        assertThat(answer.error()).as("%s", log).isEmpty();
        if (!moved[key]) {
          boolean admit = used[key] + hits <= LIMIT;
          if (admit || countsRefused(algorithm)) {
            used[key] += hits;
          }
          assertThat(answer.remaining())
              .as("key %d after %s", key, log)
              .isEqualTo(remaining(used[key]));
        }
        if (answer.status() == Status.UNDER_LIMIT) {
          admitted[key] += hits;
          during[key] += moved[key] ? hits : 0;
        }
      }
      cluster.revive(down);
      log.add("back " + down.address());
      awaitEverywhere(timers, nodes, down, true, log);
      awaitHandOffs();
      for (int key = 0; key < KEYS; key++) {
        long left = nodes.get(random.nextInt(nodes.size())).check(req(algorithm, key, 0)).get(0)
            .remaining();
        assertThat(admitted[key])
            .as("admitted, key %d after %s", key, log)
            .isLessThanOrEqualTo(LIMIT * (1 + outages[key]));
        if (!moved[key]) {
          assertThat(left).as("key %d after %s", key, log).isEqualTo(remaining(used[key]));
          continue;
        }
        assertThat(left)
            .as("key %d after %s", key, log)
            .isLessThanOrEqualTo(remaining(before[key]))
            .isLessThanOrEqualTo(remaining(during[key]));
        used[key] = LIMIT - left;
      }
    }
  }

  /**
   * Waits until every one of {@code nodes} has {@code peer} down and off its ring ({@code back}
   * false), or up and on its ring ({@code back} true: a peer kept on a ring only because another
   * reaches it is not back there), stepping fake time a probe round at a time meanwhile; a failure
   * names {@code log}, the steps of the run so far.
   */
  private static void awaitEverywhere(
      FakeScheduler timers, List<Node> nodes, Node peer, boolean back, List<String> log)
      throws Exception {
    String address = peer.address();
    for (int round = 0; round < 400; round++) {
      boolean settled =
          Await.holdsWithin(
              Duration.ofMillis(50),
              () ->
                  nodes.stream()
                      .allMatch(
                          n ->
                              n.cluster().membership().ring().contains(address) == back
                                  && n.cluster().liveness().isDown(address) != back));
      if (settled) {
        return;
      }
      timers.advance(PeerProber.INTERVAL);
    }
    throw new AssertionError(
        address + (back ? " is not back" : " is not down") + " everywhere after " + log);
  }

  /**
   * Sends 1 or 2 hits on a random key to {@code asked}, counts them in {@code used} as the model
   * does and checks the answer against it.
   */
  private static void hit(
      Node asked, Random random, Algorithm algorithm, long[] used, List<String> log) {
    int key = random.nextInt(KEYS);
    hit(asked, key, 1 + random.nextInt(2), algorithm, used, log);
  }

  /**
   * Sends {@code hits} on {@code key} to {@code asked}, counts them in {@code used} as the model
   * does, checks the answer against it and returns whether the model admits them.
   */
  private static boolean hit(
      Node asked, int key, long hits, Algorithm algorithm, long[] used, List<String> log) {
    RateLimitResponse answer = asked.check(req(algorithm, key, hits)).get(0);
    boolean admitted = used[key] + hits <= LIMIT;
    if (admitted || countsRefused(algorithm)) {
      used[key] += hits;
    }
    log.add("hit " + key + " x" + hits + " at " + asked.address());
    assertThat(answer.error()).as("%s", log).isEmpty();
    assertThat(answer.remaining())
        .as("key %d after %s", key, log)
        .isEqualTo(remaining(used[key]));
    assertThat(answer.status() == Status.UNDER_LIMIT)
        .as("admitted, key %d after %s", key, log)
        .isEqualTo(admitted);
    return admitted;
  }

  /** Asks a random node for every key without a hit and checks each count against the model. */
  private void checkEveryKey(Random random, Algorithm algorithm, long[] used, List<String> log) {
    for (int key = 0; key < KEYS; key++) {
      Node asked = cluster.node(random.nextInt(cluster.nodes().size()));
      assertThat(asked.check(req(algorithm, key, 0)).get(0).remaining())
          .as("key %d after %s", key, log)
          .isEqualTo(remaining(used[key]));
    }
  }

  /** Whether {@code algorithm} counts a refused hit too, as the fixed window does. */
  private static boolean countsRefused(Algorithm algorithm) {
    return algorithm == Algorithm.FIXED_WINDOW;
  }

  private static long remaining(long used) {
    return Math.max(0, LIMIT - used);
  }

  private static List<String> addresses(List<Node> nodes) {
    return nodes.stream().map(Node::address).toList();
  }

  private void awaitHandOffs() {
    for (Node n : cluster.nodes()) {
      n.cluster().membership().delivered().orTimeout(30, SECONDS).join();
    }
    for (Node n : cluster.nodes()) {
      n.cluster().handOff().pending().orTimeout(30, SECONDS).join();
    }
  }

  /** Returns each key's owner on the ring of the first node, for the log of a failure. */
  private String owners() {
    return owners(cluster.node(0));
  }

  /** Returns each key's owner on {@code node}'s ring, for the log of a failure. */
  private static String owners(Node node) {
    HashRing ring = node.cluster().membership().ring();
    Map<Integer, String> owners = new TreeMap<>();
    for (int key = 0; key < KEYS; key++) {
      owners.put(key, ring.ownerOf(req(Algorithm.TOKEN_BUCKET, key, 0).hashKey()));
    }
    return "owners " + owners;
  }

  private static RateLimitRequest req(Algorithm algorithm, int key, long hits) {
    return RateLimitRequest.builder("churn", KEY_NAMES.get(key))
        .algorithm(algorithm)
        .hits(hits)
        .limit(LIMIT)
        .duration(Duration.ofHours(24).toMillis())
        .build();
  }
}
