package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

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

  /** Returns a pool whose every call fails before it is sent: no peer has a client. */
  private static PeerClientPool unreachable() {
    return new PeerClientPool(
        address -> {
          throw new IllegalStateException("no client of " + address);
        },
        new FakeClock());
  }

  @Test
  void formerOwnerThrowsForOneOwnersItems_theOthersAnsweredInOrderAndThoseGetTheirError()
      throws Exception {
    HandOn handOn =
        new HandOn(
            SELF,
            () -> RING,
            unreachable(),
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

  /** Repeated: each run in one JVM warns once, whatever the runs before it logged. */
  @RepeatedTest(2)
  void formerOwnerThrowsOnEveryCall_warnsOncePerFailureTypeNotPerCall() throws Exception {
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    Logger log = (Logger) LoggerFactory.getLogger(HandOn.class);
    log.addAppender(appender);
    try {
      HandOn handOn =
          new HandOn(
              SELF,
              () -> RING,
              unreachable(),
              items -> List.of(),
              (items, owner, error) -> {
                throw new UnsupportedOperationException("former owner broke again");
              },
              owner -> {},
              Duration.ofSeconds(1),
              new RateLimitedLogger(log, new FakeClock(), RateLimitedLogger.DEFAULT_INTERVAL));

      for (int call = 0; call < 5; call++) {
        assertThat(handOn.answer(List.of(ownedBy(B))).get().get(0).error())
            .endsWith("former owner broke again");
      }

      assertThat(appender.list)
          .filteredOn(e -> e.getLevel() == Level.WARN)
          .as("WARN lines of 5 calls failing alike")
          .hasSize(1);
    } finally {
      log.detachAppender(appender);
    }
  }
}
