package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@code GET /v1/Status}'s members as a node of an in-JVM cluster sees them. */
class StatusRouteTest {

  private static final ClusterSettings SETTINGS =
      new ClusterSettings(
          512,
          ClusterSettings.defaults().hash(),
          1000,
          Duration.ofNanos(500_000),
          Duration.ofSeconds(5),
          false,
          Duration.ofMillis(100),
          1000,
          Duration.ofSeconds(5),
          "static",
          List.of(),
          true);

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static Map<String, JsonObject> members(Node at) {
    String json = new StatusRoute(at.cluster(), null, new SimpleMeterRegistry()).json();
    Map<String, JsonObject> members = new HashMap<>();
    for (JsonElement m : JsonParser.parseString(json).getAsJsonObject().getAsJsonArray("members")) {
      members.put(m.getAsJsonObject().get("address").getAsString(), m.getAsJsonObject());
    }
    return members;
  }

  private static double shareSum(Map<String, JsonObject> members) {
    return members.values().stream().mapToDouble(m -> m.get("ring_share").getAsDouble()).sum();
  }

  @Test
  void members_threeUp_eachReachableWithAShareAddingUpToOne() {
    cluster = LocalCluster.start(3, SETTINGS);

    Map<String, JsonObject> members = members(cluster.node(0));

    assertThat(members).hasSize(3);
    assertThat(members.get(cluster.node(0).address()).get("self").getAsBoolean()).isTrue();
    for (JsonObject m : members.values()) {
      assertThat(m.get("reachable").getAsBoolean()).isTrue();
      assertThat(m.get("in_ring").getAsBoolean()).isTrue();
      assertThat(m.get("ring_share").getAsDouble()).isBetween(0.2, 0.5);
    }
    assertThat(shareSum(members)).isCloseTo(1.0, within(1e-9));
  }

  @Test
  void members_peerKilled_unreachableOffTheRingWithItsError() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node asked = cluster.node(0);
    Node down = cluster.node(1);
    String key = cluster.keyOwnedBy(down, "test", "lost:");
    cluster.kill(down);
    asked.check(RateLimitRequest.builder("test", key).hits(1).limit(5).duration(60_000).build());

    Map<String, JsonObject> members = members(asked);

    JsonObject gone = members.get(down.address());
    assertThat(gone.get("reachable").getAsBoolean()).isFalse();
    assertThat(gone.get("in_ring").getAsBoolean()).isFalse();
    assertThat(gone.get("ring_share").getAsDouble()).isZero();
    assertThat(gone.get("error").getAsString()).isNotEmpty();
    assertThat(members.get(asked.address()).get("reachable").getAsBoolean()).isTrue();
    assertThat(shareSum(members)).isCloseTo(1.0, within(1e-9));
  }
}
