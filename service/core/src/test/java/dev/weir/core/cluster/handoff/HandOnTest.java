package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** What an owner answers for forwarded items whose key it handed on, when something fails. */
class HandOnTest {

  private static final String SELF = "10.0.0.1:1051";
  private static final String B = "10.0.0.2:1051";
  private static final String C = "10.0.0.3:1051";
  private static final HashRing RING = HashRing.of(List.of(SELF, B, C), 64, PeerHash.FNV1A);

  private static RateLimitRequest ownedBy(String owner) {
    return IntStream.range(0, 1000)
        .mapToObj(
            i -> RateLimitRequest.builder("n", "k" + i).hits(1).limit(5).duration(60_000).build())
        .filter(r -> RING.ownerOf(r.hashKey()).equals(owner))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void formerOwnerThrowsForOneOwnersItems_theOthersAnsweredInOrderAndThoseGetTheirError()
      throws Exception {
    PeerClientPool unreachable =
        new PeerClientPool(
            address -> {
              throw new IllegalStateException("no client of " + address);
            },
            new FakeClock());
    HandOn handOn =
        new HandOn(
            SELF,
            () -> RING,
            unreachable,
            items ->
                items.stream().map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, 1)).toList(),
            (items, owner, error) -> {
              if (owner.equals(B)) {
                throw new IllegalStateException("former owner broke");
              }
              return items.stream()
                  .map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, 5, 3, 2))
                  .toList();
            },
            owner -> {},
            Duration.ofSeconds(1));
    RateLimitRequest toB = ownedBy(B);

    List<RateLimitResponse> answers =
        handOn.answer(List.of(toB, ownedBy(SELF), ownedBy(C))).get();

    assertThat(answers).hasSize(3);
    assertThat(answers.get(0).error())
        .isEqualTo(
            "error while answering rate limit for '"
                + toB.hashKey()
                + "': former owner broke");
    assertThat(answers.get(1).remaining()).isEqualTo(4);
    assertThat(answers.get(2).remaining()).isEqualTo(3);
  }
}
