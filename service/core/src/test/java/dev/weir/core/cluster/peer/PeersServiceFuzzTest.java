package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.AnnounceResp;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.TransferBucketsResp;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.proto.gubernator.UpdatePeerGlobalsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobalsResp;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.LoggerFactory;

/**
 * Coverage-guided fuzzing of the peer protocol as an authenticated peer speaks it: the first byte
 * picks {@code GetPeerRateLimits}, {@code UpdatePeerGlobals}, {@code TransferBuckets} or {@code
 * Announce}, the rest is parsed as its request and handled by {@link PeersService} over a real
 * {@link ClusterNode} (engine, store, GLOBAL manager, hand-off; its one other member is reached
 * through an in-process channel that answers nothing; the node has joined, so it answers probes).
 * The call ends with a response or one of the documented refusals ({@code INVALID_ARGUMENT}, {@code
 * OUT_OF_RANGE}), every forwarded item is answered, the node still decides its own keys, and every
 * state a peer's call stored passes the same checks as a snapshot a peer sends (the
 * states the engine itself leaves are checked by {@link EngineStatesPassPeerChecksTest}). Seeds:
 * {@code PeersServiceFuzzTestInputs/peerCall} in the test resources.
 */
class PeersServiceFuzzTest {

  private static final String SELF = "127.0.0.1:1051";
  private static final String OTHER = "127.0.0.2:1051";
  private static final FakeClock CLOCK = new FakeClock(1_767_225_600_000L);
  private static final ClockBucketStore STORE = new ClockBucketStore(CLOCK, 10_000);
  private static final PeerInputValidator VALIDATOR =
      new PeerInputValidator(InputLimits.DEFAULTS, SELF);
  private static final FakeScheduler SCHEDULER = new FakeScheduler(CLOCK);
  private static final ClusterNode NODE = node();
  private static final PeersService SERVICE =
      new PeersService(NODE, VALIDATOR, CLOCK, new RecordingMetrics());

  private static ClusterNode node() {
    ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger(ClusterNode.class))
        .setLevel(Level.WARN);
    StaticDiscovery discovery = new StaticDiscovery(SELF, List.of(SELF, OTHER));
    ClusterNode node =
        new ClusterNode(
            SELF,
            ClusterSettings.defaults(),
            STORE,
            new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), STORE, CLOCK)::decide,
            SCHEDULER,
            CLOCK,
            discovery,
            address -> InProcessChannelBuilder.forName("nobody-at-" + address).build());
    try {
      node.join(discovery);
    } catch (Exception e) {
      throw new IllegalStateException("the fuzzed node did not join", e);
    }
    return node;
  }

  @FuzzTest(maxDuration = "10s")
  void peerCall(byte[] input) {
    if (input.length == 0) {
      return;
    }
    byte[] message = Arrays.copyOfRange(input, 1, input.length);
    Recorded<?> answer;
    List<String> storedKeys = new ArrayList<>();
    Map<String, Optional<BucketState>> before = new HashMap<>();
    try {
      switch (input[0] & 3) {
        case 0 -> {
          GetPeerRateLimitsReq request = GetPeerRateLimitsReq.parseFrom(message);
          Recorded<GetPeerRateLimitsResp> forwarded = new Recorded<>();
          SERVICE.getPeerRateLimits(request, forwarded);
          assertThat(forwarded.awaitCompleted()).as("answered").isTrue();
          if (forwarded.error == null) {
            assertThat(forwarded.value.getRateLimitsCount()).isEqualTo(request.getRequestsCount());
          }
          answer = forwarded;
        }
        case 1 -> {
          UpdatePeerGlobalsReq request = UpdatePeerGlobalsReq.parseFrom(message);
          request.getGlobalsList().stream().map(UpdatePeerGlobal::getKey).forEach(storedKeys::add);
          remember(storedKeys, before);
          Recorded<UpdatePeerGlobalsResp> updated = new Recorded<>();
          SERVICE.updatePeerGlobals(request, updated);
          answer = updated;
        }
        case 2 -> {
          TransferBucketsReq request = TransferBucketsReq.parseFrom(message);
          request.getBucketsList().stream().map(BucketSnapshot::getKey).forEach(storedKeys::add);
          remember(storedKeys, before);
          Recorded<TransferBucketsResp> transferred = new Recorded<>();
          SERVICE.transferBuckets(request, transferred);
          answer = transferred;
        }
        default -> {
          Recorded<AnnounceResp> announced = new Recorded<>();
          SERVICE.announce(AnnounceReq.parseFrom(message), announced);
          if (!announced.completed()) {
            SCHEDULER.advance(ClusterSettings.defaults().batchTimeout().multipliedBy(4));
          }
          answer = announced;
        }
      }
    } catch (InvalidProtocolBufferException notAMessage) {
      return;
    }

    assertThat(answer.awaitCompleted()).as("answered").isTrue();
    if (answer.error != null) {
      assertThat(Status.fromThrowable(answer.error).getCode())
          .isIn(Status.Code.INVALID_ARGUMENT, Status.Code.OUT_OF_RANGE);
    }
    long now = CLOCK.wallMillis();
    for (String key : storedKeys) {
      Optional<BucketState> state = STORE.get(key);
      if (state.isPresent() && !state.equals(before.get(key))) {
        assertThat(VALIDATOR.checkSnapshot(PeerProtos.toSnapshot(key, state.get()), now))
            .as("stored state of %s: %s", key, state.get())
            .isEmpty();
      }
    }
    assertThat(probe())
        .as("a check of this node's own key after the call")
        .isEqualTo(dev.weir.core.model.Status.UNDER_LIMIT);
  }

  /** Records each of {@code keys}' state before the call, so only what the call stored is checked. */
  private static void remember(List<String> keys, Map<String, Optional<BucketState>> before) {
    keys.forEach(key -> before.put(key, STORE.get(key)));
  }

  /** Returns the status of a check of a key of this node that never goes over its limit. */
  private static dev.weir.core.model.Status probe() {
    RateLimitResponse answer =
        NODE.decideAsOwner(
                List.of(
                    RateLimitRequest.builder("fuzz_probe", "always-under")
                        .hits(0)
                        .limit(1)
                        .duration(60_000)
                        .build()))
            .get(0);
    return answer.status();
  }

  /**
   * What a call answered. The answer may come from another thread: a hand-off's copy to the other
   * member fails on the in-process channel's executor, and that ends the call.
   */
  private static final class Recorded<T> implements StreamObserver<T> {
    volatile T value;
    volatile Throwable error;
    private final CountDownLatch done = new CountDownLatch(1);

    @Override
    public void onNext(T v) {
      value = v;
    }

    @Override
    public void onError(Throwable t) {
      error = t;
      done.countDown();
    }

    @Override
    public void onCompleted() {
      done.countDown();
    }

    /** Returns whether the call has ended. */
    boolean completed() {
      return done.getCount() == 0;
    }

    /** Returns whether the call ends within a few seconds. */
    boolean awaitCompleted() {
      try {
        return done.await(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }
}
