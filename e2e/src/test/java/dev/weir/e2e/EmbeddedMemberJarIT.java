package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.client.WeirClient;
import dev.weir.core.Weir;
import dev.weir.core.WeirMember;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.config.EnvReader;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.AwaitForwarding;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A member embedded in this JVM through {@link Weir#builder()} and a {@code weir.jar} process in
 * one static cluster: they share counters, and the embedded member hands its buckets to the jar
 * when it closes.
 */
class EmbeddedMemberJarIT {

  /** A forwarding deadline a loaded two-core CI machine meets (the default is 500 ms). */
  private static final Map<String, String> SLOW_MACHINE = Map.of("WEIR_BATCH_TIMEOUT", "5s");

  private final HttpClient http = HttpClient.newHttpClient();
  private WeirMember embedded;
  private NodeProcess jar;
  private WeirClient jarClient;

  @BeforeEach
  void startCluster() throws Exception {
    int embeddedPort = NodeProcess.freePort();
    String embeddedAddress = "127.0.0.1:" + embeddedPort;
    int jarGrpc = NodeProcess.freePort();
    int jarPeer = NodeProcess.freePort();
    String jarAddress = "127.0.0.1:" + jarGrpc;
    List<String> peers = List.of(embeddedAddress + "@" + embeddedPort, jarAddress + "@" + jarPeer);
    embedded =
        Weir.builder()
            .advertiseAddress(embeddedAddress)
            .clusterSettings(ClusterSettings.from(new EnvReader(SLOW_MACHINE), List.of("static")))
            .staticPeers(peers)
            .peerSecret(NodeProcess.PEER_SECRET)
            .start();
    Map<String, String> jarEnv = new HashMap<>(SLOW_MACHINE);
    jarEnv.put("WEIR_STATIC_PEERS", String.join(",", peers));
    jar = NodeProcess.startMember(jarGrpc, NodeProcess.freePort(), jarPeer, jarEnv);
    jar.awaitHealthy(http);
    AwaitForwarding.on(List.of(embedded));
    jarClient =
        WeirClient.builder()
            .target(jarAddress)
            .batchWindow(Duration.ZERO)
            .deadline(Duration.ofSeconds(30))
            .build();
  }

  @AfterEach
  void stop() {
    if (jarClient != null) {
      jarClient.close();
    }
    if (embedded != null) {
      embedded.close();
    }
    if (jar != null) {
      jar.close();
    }
  }

  private static RateLimitRequest embeddedHit(String key, long hits) {
    return RateLimitRequest.builder("embedded_e2e", key)
        .hits(hits)
        .limit(10)
        .duration(600_000)
        .build();
  }

  private static RateLimitReq jarHit(String key, long hits) {
    return RateLimitReq.newBuilder()
        .setName("embedded_e2e")
        .setUniqueKey(key)
        .setHits(hits)
        .setLimit(10)
        .setDuration(600_000)
        .build();
  }

  @Test
  void checks_throughTheEmbeddedMemberAndTheJar_shareOneCounter() {
    int admitted = 0;
    for (int i = 0; i < 30; i++) {
      boolean under;
      if (i % 2 == 0) {
        var r = embedded.decide(embeddedHit("shared", 1)).join();
        assertThat(r.error()).isEmpty();
        under = r.status() == dev.weir.core.model.Status.UNDER_LIMIT;
      } else {
        RateLimitResp r = jarClient.check(jarHit("shared", 1)).join();
        assertThat(r.getError()).isEmpty();
        under = r.getStatus() == Status.UNDER_LIMIT;
      }
      admitted += under ? 1 : 0;
    }

    assertThat(admitted).isEqualTo(10);
  }

  @Test
  void close_embeddedMember_handsItsBucketsToTheJar() {
    List<String> keys = keysOwnedByEmbedded(10);
    for (String key : keys) {
      assertThat(embedded.decide(embeddedHit(key, 3)).join().error()).isEmpty();
    }

    embedded.close();

    assertThat(embedded.cluster().handOff().sentCount()).isGreaterThanOrEqualTo(keys.size());
    for (String key : keys) {
      RateLimitResp r = jarClient.check(jarHit(key, 0)).join();
      assertThat(r.getError()).as(key).isEmpty();
      assertThat(r.getRemaining()).as(key).isEqualTo(7);
    }
  }

  private List<String> keysOwnedByEmbedded(int n) {
    Random random = new Random(5);
    List<String> keys = new ArrayList<>();
    String self = embedded.cluster().self();
    while (keys.size() < n) {
      String key = Long.toHexString(random.nextLong());
      if (embedded
          .cluster()
          .membership()
          .ring()
          .ownerOf(embeddedHit(key, 1).hashKey())
          .equals(self)) {
        keys.add(key);
      }
    }
    return keys;
  }
}
