package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.quota.QuotaOwner;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class QuotaRouterTest {

  private final FakeClock clock = new FakeClock();

  @Test
  void report_ringEmpty_thisNodeLeftAndEveryOtherIsDown_answeredHereNotWithAnError() {
    PeerClientPool noPeers =
        new PeerClientPool(
            address -> {
              throw new IllegalStateException("no peer to call");
            },
            clock);
    QuotaRouter router =
        new QuotaRouter(
            "self:1",
            () -> HashRing.of(List.of(), 64, PeerHash.FNV1A),
            noPeers,
            Duration.ofSeconds(1),
            clock);
    router.ownedBy(
        new QuotaOwner(
            new InMemoryBucketStore(clock), clock, new FakeScheduler(clock), pushes -> {}));
    RateLimitRequest rule =
        RateLimitRequest.builder("rlqs/r", "k=v")
            .limit(6000)
            .duration(60_000)
            .algorithm(Algorithm.FIXED_WINDOW)
            .build();

    QuotaShare share =
        router.report(new QuotaUsage(rule, "proxy", 10, 0, 0, 5000, false)).join();

    assertThat(share.isError()).isFalse();
  }
}
