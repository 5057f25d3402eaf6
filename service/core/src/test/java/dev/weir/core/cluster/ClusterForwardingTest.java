package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.health.HealthStatus;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.core.testkit.RingKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ClusterForwardingTest {

  // Gubernator's defaults but a generous call deadline: tests share two cores with other builds.
  static final ClusterSettings SETTINGS =
      new ClusterSettings(
          512, ClusterSettings.defaults().hash(), 1000, Duration.ofNanos(500_000),
          Duration.ofSeconds(5), false, Duration.ofMillis(100), 1000, Duration.ofSeconds(5),
          "static", List.of(), true);

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static RateLimitRequest req(String key, long hits, long limit) {
    return RateLimitRequest.builder("test", key).hits(hits).limit(limit).duration(60_000).build();
  }

  @Test
  void check_nonOwner_forwardsAndNamesOwnerSharingOneCount() {
    cluster = LocalCluster.start(3, SETTINGS);
    String key = "account:1";
    Node owner = cluster.ownerOf("test_" + key);
    List<Node> others = cluster.nonOwnersOf("test_" + key);

    RateLimitResponse viaOwner = owner.check(req(key, 1, 5)).get(0);
    RateLimitResponse viaFirst = others.get(0).check(req(key, 1, 5)).get(0);
    RateLimitResponse viaSecond = others.get(1).check(req(key, 1, 5)).get(0);

    assertThat(viaOwner.metadata()).isEmpty();
    assertThat(viaOwner.remaining()).isEqualTo(4);
    assertThat(viaFirst.metadata()).isEqualTo(Map.of("owner", owner.address()));
    assertThat(viaFirst.remaining()).isEqualTo(3);
    assertThat(viaSecond.metadata()).isEqualTo(Map.of("owner", owner.address()));
    assertThat(viaSecond.remaining()).isEqualTo(2);
    assertThat(others.get(0).store().get("test_" + key)).isEmpty();
  }

  @Test
  void check_unknownBehaviorBits_ignoredOnEveryNodeAsOnTheOwner() {
    cluster = LocalCluster.start(3, SETTINGS);
    String key = "account:9";
    Node owner = cluster.ownerOf("test_" + key);
    List<Node> others = cluster.nonOwnersOf("test_" + key);
    RateLimitRequest withUnknownBits =
        RateLimitRequest.builder("test", key).hits(1).limit(5).duration(60_000)
            .behavior(64 | Behavior.DRAIN_OVER_LIMIT).build();

    RateLimitResponse viaOwner = owner.check(withUnknownBits).get(0);
    RateLimitResponse viaOther = others.get(0).check(withUnknownBits).get(0);

    assertThat(viaOwner.error()).isEmpty();
    assertThat(viaOwner.remaining()).isEqualTo(4);
    assertThat(viaOther.error()).isEmpty();
    assertThat(viaOther.remaining()).isEqualTo(3);
    assertThat(viaOther.metadata()).containsEntry("owner", owner.address());
  }

  @Test
  void check_mixOfLocalAndForwardedItems_answersInRequestOrder() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node asked = cluster.node(1);
    // 20 keys the asked node owns and 40 it forwards, each with a limit of its own.
    List<RateLimitRequest> requests = new ArrayList<>();
    List<String> keys =
        RingKeys.split(
            asked.cluster().membership().ring(), "test", "order:", asked.address(), 20, 40);
    for (String key : keys) {
      requests.add(req(key, 1, requests.size() + 1));
    }
    Collections.shuffle(requests, new java.util.Random(3));

    List<RateLimitResponse> answers = asked.service().decide(requests).join();

    assertThat(answers).hasSize(60);
    for (int i = 0; i < 60; i++) {
      RateLimitRequest r = requests.get(i);
      RateLimitResponse a = answers.get(i);
      assertThat(a.error()).isEmpty();
      assertThat(a.limit()).isEqualTo(r.limit());
      assertThat(a.remaining()).isEqualTo(r.limit() - 1);
      Node owner = cluster.ownerOf(r.hashKey());
      if (owner == asked) {
        assertThat(a.metadata()).isEmpty();
      } else {
        assertThat(a.metadata()).containsEntry("owner", owner.address());
      }
    }
  }

  @Test
  void check_manyItemsForOnePeer_sentAsOneBatchOnTheForwardingStream() {
    ClusterSettings settings =
        new ClusterSettings(
            512, ClusterSettings.defaults().hash(), 1000, Duration.ofMillis(20),
            Duration.ofSeconds(5), false, Duration.ofMillis(100), 1000, Duration.ofSeconds(1),
            "static", List.of(), true);
    cluster = LocalCluster.start(2, settings);
    Node asked = cluster.node(0);
    Node owner = cluster.node(1);
    List<RateLimitRequest> requests = new ArrayList<>();
    for (int i = 0; requests.size() < 200; i++) {
      if (cluster.ownerOf("test_batch:" + i) == owner) {
        requests.add(req("batch:" + i, 1, 10));
      }
    }

    List<RateLimitResponse> answers = asked.service().decide(requests).join();

    assertThat(answers).allSatisfy(a -> assertThat(a.remaining()).isEqualTo(9));
    assertThat(owner.callsReceived("ForwardBatches")).isOne();
    assertThat(owner.callsReceived("GetPeerRateLimits")).isZero();
    assertThat(asked.cluster().peers().get(owner.address()).batchesSent()).isOne();
  }

  @Test
  void check_noBatchingBehavior_oneCallPerItem() {
    cluster = LocalCluster.start(2, SETTINGS);
    Node asked = cluster.node(0);
    Node owner = cluster.node(1);
    List<RateLimitRequest> requests = new ArrayList<>();
    for (int i = 0; requests.size() < 10; i++) {
      if (cluster.ownerOf("test_nb:" + i) == owner) {
        requests.add(req("nb:" + i, 1, 10).withBehavior(Behavior.NO_BATCHING));
      }
    }

    asked.service().decide(requests).join();

    assertThat(owner.callsReceived("GetPeerRateLimits")).isEqualTo(10);
  }

  @Test
  void check_batchingDisabled_oneCallPerItem() {
    cluster = LocalCluster.start(2, SETTINGS.withDisableBatching(true));
    Node asked = cluster.node(0);
    Node owner = cluster.node(1);
    List<RateLimitRequest> requests = new ArrayList<>();
    for (int i = 0; requests.size() < 10; i++) {
      if (cluster.ownerOf("test_db:" + i) == owner) {
        requests.add(req("db:" + i, 1, 10));
      }
    }

    asked.service().decide(requests).join();

    assertThat(owner.callsReceived("GetPeerRateLimits")).isEqualTo(10);
  }

  @Test
  void check_ownerChangesWhileInFlight_retriedOnNewOwner() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node asked = cluster.node(0);
    Node moving = cluster.node(1);
    String key = cluster.keyOwnedBy(moving, "test", "moving:");
    moving.beforeOwnerCheck(
        () -> {
          asked.cluster().membership().departed(moving.address());
          throw new IllegalStateException("owner left");
        });

    RateLimitResponse answer = asked.check(req(key, 1, 5)).get(0);

    assertThat(answer.error()).isEmpty();
    assertThat(answer.remaining()).isEqualTo(4);
    String newOwner = asked.cluster().membership().ring().ownerOf("test_" + key);
    assertThat(newOwner).isNotEqualTo(moving.address());
    if (newOwner.equals(asked.address())) {
      assertThat(answer.metadata()).isEmpty();
    } else {
      assertThat(answer.metadata()).containsEntry("owner", newOwner);
    }
  }

  @Test
  void check_invalidFields_perItemErrorsOthersAnswered() {
    cluster = LocalCluster.start(2, SETTINGS);
    List<RateLimitResponse> answers =
        cluster
            .node(0)
            .check(
                RateLimitRequest.builder("test", "").limit(5).duration(1000).build(),
                RateLimitRequest.builder("", "k").limit(5).duration(1000).build(),
                req("fine", 1, 5));
    assertThat(answers.get(0).error()).isEqualTo("field 'unique_key' cannot be empty");
    assertThat(answers.get(1).error()).isEqualTo("field 'namespace' cannot be empty");
    assertThat(answers.get(2).error()).isEmpty();
  }

  @Test
  void check_moreThan1000Items_refusedWithGubernatorMessage() {
    cluster = LocalCluster.start(1, SETTINGS);
    List<RateLimitRequest> requests = Collections.nCopies(1001, req("k", 1, 5));
    assertThatThrownBy(() -> cluster.node(0).service().decide(requests).join())
        .hasCauseInstanceOf(RequestTooLargeException.class)
        .cause()
        .hasMessage("Requests.RateLimits list too large; max size is '1000'");
  }

  @Test
  void health_allPeersAnswer_healthyWithPeerCount() {
    cluster = LocalCluster.start(3, SETTINGS);
    HealthStatus h = cluster.node(2).cluster().nodeHealth().health();
    assertThat(h.healthy()).isTrue();
    assertThat(h.message()).isEmpty();
    assertThat(h.peerCount()).isEqualTo(3);
    assertThat(h.advertiseAddress()).isEqualTo(cluster.node(2).address());
  }

  @Test
  void health_selfMissingFromPeers_unhealthyWithGubernatorMessage() {
    cluster = LocalCluster.start(2, SETTINGS);
    Node n = cluster.node(0);
    n.cluster().membership().accept(java.util.Set.of(cluster.node(1).address()));
    HealthStatus h = n.cluster().nodeHealth().health();
    assertThat(h.healthy()).isFalse();
    assertThat(h.message()).isEqualTo("this instance is not found in the peer list");
    assertThat(h.peerCount()).isEqualTo(1);
  }

  @Test
  void check_overLimitOnOwnerThroughPeer_statusTravels() {
    cluster = LocalCluster.start(2, SETTINGS);
    Node owner = cluster.node(1);
    String key = cluster.keyOwnedBy(owner, "test", "over:");
    cluster.node(0).check(req(key, 2, 2));
    RateLimitResponse r = cluster.node(0).check(req(key, 1, 2)).get(0);
    assertThat(r.status()).isEqualTo(Status.OVER_LIMIT);
    assertThat(r.remaining()).isZero();
  }
}
