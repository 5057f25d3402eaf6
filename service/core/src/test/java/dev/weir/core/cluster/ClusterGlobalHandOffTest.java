package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** GLOBAL keys whose owner changes: every hit counts once at the new owner. */
class ClusterGlobalHandOffTest {

  private static final long LIMIT = 10;

  // GLOBAL sync timers far away (the tests flush explicitly); hand-off on.
  private static final ClusterSettings SETTINGS =
      new ClusterSettings(
          512, ClusterSettings.defaults().hash(), 1000, Duration.ofNanos(500_000),
          Duration.ofSeconds(5), false, Duration.ofHours(1), 1000, Duration.ofSeconds(5),
          "static", List.of(), true);

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static RateLimitRequest global(String key, long hits) {
    return RateLimitRequest.builder("g", key).hits(hits).limit(LIMIT).duration(600_000)
        .behavior(Behavior.GLOBAL).build();
  }

  private Node nextOwner(String key, Node leaving) {
    HashRing without = leaving.cluster().membership().ring().without(leaving.address());
    String address = without.ownerOf("g_" + key);
    return cluster.nodes().stream()
        .filter(n -> n.address().equals(address))
        .findFirst()
        .orElseThrow();
  }

  /** A non-owner with queued GLOBAL hits becomes the owner when the old owner leaves. */
  @Test
  void leave_nextOwnerHadQueuedGlobalHits_theyStillCount() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node leaving = cluster.node(2);
    String key = cluster.keyOwnedBy(leaving, "g", "k");
    Node next = nextOwner(key, leaving);
    leaving.check(global(key, 3));
    leaving.cluster().global().flushBroadcasts().join();
    next.check(global(key, 2)); // answered from next's copy, queued for the leaver
    leaving.check(global(key, 1));

    cluster.removeNode(leaving);
    next.cluster().global().flush().join();

    assertThat(next.check(global(key, 0)).get(0).remaining())
        .as("3 + 2 + 1 hits admitted")
        .isEqualTo(LIMIT - 6);
  }
}
