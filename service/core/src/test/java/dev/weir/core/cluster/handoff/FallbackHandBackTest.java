package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.RingKeys;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Keys counted for an unreached owner whose hand-back fails, key by key or as a whole, are
 * remembered again once, and the failure is logged.
 */
class FallbackHandBackTest {

  private static final String SELF = "10.0.0.1:81";
  private static final String OWNER = "10.0.0.2:81";
  private static final HashRing RING = HashRing.of(List.of(SELF, OWNER), 512, PeerHash.FNV1A);
  private static final Throwable UNREACHED = io.grpc.Status.UNAVAILABLE.asRuntimeException();

  private final FakeClock clock = new FakeClock();
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final FallbackCounts counts = new FallbackCounts(clock, store);
  private final ListAppender<ILoggingEvent> log = new ListAppender<>();
  private final Logger logger = (Logger) LoggerFactory.getLogger(FallbackHandBack.class);
  private final List<String> keys = RingKeys.split(RING, "n", "k", OWNER, 2, 0);

  @BeforeEach
  void countForTheUnreachedOwner() {
    log.start();
    logger.addAppender(log);
    long now = clock.wallMillis();
    for (String key : keys) {
      store.put(
          "n_" + key, new TokenBucketState(Status.UNDER_LIMIT, 5, 60_000, 4, now, now + 60_000));
      counts.counted(
          List.of(RateLimitRequest.builder("n", key).hits(1).limit(5).duration(60_000).build()),
          List.of(RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, now + 60_000)),
          OWNER,
          UNREACHED);
    }
  }

  @AfterEach
  void detach() {
    logger.detachAppender(log);
  }

  private List<String> warnings() {
    return log.list.stream()
        .filter(e -> e.getLevel() == Level.WARN)
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  private void handBack(FallbackHandBack.Sender sender) throws Exception {
    new FallbackHandBack(counts, sender)
        .send(counts.takeFor(OWNER, RING), RING)
        .get(5, TimeUnit.SECONDS);
  }

  @Test
  void send_oneKeyFails_thatKeyRememberedAgainAndWarned() throws Exception {
    String failing = "n_" + keys.get(0);

    handBack((sent, ring) -> CompletableFuture.completedFuture(Set.of(failing)));

    assertThat(counts.takeFor(OWNER, RING).keys()).containsExactly(failing);
    assertThat(warnings()).singleElement().asString().startsWith("1 of 2 buckets");
  }

  @Test
  void send_failsAsAWhole_everyKeyRememberedAgainAndWarned() throws Exception {
    handBack(
        (sent, ring) ->
            CompletableFuture.failedFuture(new IllegalStateException("snapshot broke")));

    assertThat(counts.takeFor(OWNER, RING).keys())
        .containsExactlyInAnyOrder("n_" + keys.get(0), "n_" + keys.get(1));
    assertThat(warnings())
        .singleElement()
        .asString()
        .startsWith("2 of 2 buckets")
        .contains("snapshot broke");
  }

  @Test
  void send_throwsBeforeSending_everyKeyRememberedAgainAndWarned() throws Exception {
    handBack(
        (sent, ring) -> {
          throw new IllegalStateException("executor rejected");
        });

    assertThat(counts.takeFor(OWNER, RING).keys()).hasSize(2);
    assertThat(warnings()).singleElement().asString().contains("executor rejected");
  }

  @Test
  void send_failsAsAWholeTwice_countsLostAndWarnedSo() throws Exception {
    FallbackHandBack.Sender broken =
        (sent, ring) -> CompletableFuture.failedFuture(new IllegalStateException("broke"));
    handBack(broken);

    handBack(broken);

    assertThat(counts.isEmpty()).isTrue();
    assertThat(warnings()).hasSize(2).last().asString().contains("the counts of 2 are lost");
  }
}
