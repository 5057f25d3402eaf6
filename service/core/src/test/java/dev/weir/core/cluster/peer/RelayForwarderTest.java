package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InProcessPeers;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class RelayForwarderTest {

  private final FakeClock clock = new FakeClock();
  // Items wait for the batch window, which the fake clock never reaches.
  private final PeerClientSettings settings =
      new PeerClientSettings(1000, Duration.ofSeconds(1), Duration.ofSeconds(5), false);
  private final InProcessPeers peers = new InProcessPeers(settings, clock);
  private final PeerClientPool pool = new PeerClientPool(peers::client);

  @AfterEach
  void stop() {
    pool.close();
    peers.close();
  }

  private static RateLimitRequest hit(String key) {
    return RateLimitRequest.builder("n", key).hits(1).limit(5).duration(60_000).build();
  }

  @Test
  void retain_peersThatLeft_theirRelayBatchersDropped() {
    RelayForwarder relays = new RelayForwarder(pool, settings, clock);
    relays.forward("a:1", "b:1", hit("k1"));
    relays.forward("a:1", "c:1", hit("k2"));
    relays.forward("d:1", "b:1", hit("k3"));
    assertThat(relays.pairs()).isEqualTo(3);

    relays.retain(List.of("a:1", "b:1"));

    assertThat(relays.pairs()).as("only a relaying b is left").isEqualTo(1);
    relays.close();
  }
}
