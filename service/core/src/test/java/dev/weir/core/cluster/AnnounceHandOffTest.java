package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A node told of a membership change answers once its hand-off is done, without a thread waiting. */
class AnnounceHandOffTest {

  private LocalCluster cluster;
  private final CountDownLatch release = new CountDownLatch(1);

  @AfterEach
  void stop() {
    release.countDown();
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void announceReturn_handOffPending_returnsAtOnceAndCompletesWhenTheHandOffDoes()
      throws Exception {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node asked = cluster.node(0);
    Node returning = cluster.node(2);
    asked.cluster().announce(returning.address(), true).get(5, TimeUnit.SECONDS);
    java.util.Random random = new java.util.Random(7);
    for (int i = 0; i < 60; i++) {
      asked.check(
          RateLimitRequest.builder("h", Long.toHexString(random.nextLong()))
              .hits(1)
              .limit(10)
              .duration(600_000)
              .build());
    }
    returning.beforeAcceptBuckets(
        () -> {
          try {
            release.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });

    CompletableFuture<Void> answered = asked.cluster().announce(returning.address(), false);

    assertThat(answered).as("the hand-off to the returning node is still running").isNotDone();
    release.countDown();
    answered.get(5, TimeUnit.SECONDS);
    assertThat(asked.cluster().membership().ring().contains(returning.address())).isTrue();
  }
}
