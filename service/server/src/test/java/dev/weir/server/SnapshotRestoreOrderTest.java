package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.snapshot.SnapshotDirectory;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.ForwardingBucketStore;
import dev.weir.core.testkit.FreePorts;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node with {@code WEIR_SNAPSHOT_DIR} answers no call before it restored its snapshot: a call
 * answered from a fresh bucket would admit a key the snapshot says is spent.
 */
class SnapshotRestoreOrderTest {

  private static final RateLimitRequest SPENT =
      RateLimitRequest.builder("n", "spent").hits(5).limit(5).duration(600_000).build();

  private final FakeClock clock = new FakeClock();
  @TempDir Path dir;
  private WeirNode node;

  @AfterEach
  void stop() {
    if (node != null) {
      node.close();
    }
  }

  @Test
  void start_callDuringTheRestore_isNotDecidedAndTheKeyIsSpentAfterwards() throws Exception {
    InMemoryBucketStore before = new InMemoryBucketStore(clock);
    new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), before, clock).decide(SPENT);
    new SnapshotDirectory(
            dir, "127.0.0.1:1", new PeerInputValidator(InputLimits.DEFAULTS, "127.0.0.1:1"), clock)
        .save(before);
    int port = FreePorts.next();
    AtomicReference<String> duringRestore = new AtomicReference<>();
    BucketStore store =
        new CallingDuringRestore(
            new InMemoryBucketStore(clock), () -> duringRestore.set(call(port, "spent")));

    node =
        WeirNode.builder(
                new WeirConfig(
                    new HostPort("127.0.0.1", port),
                    new HostPort("127.0.0.1", 0),
                    new HostPort("127.0.0.1", 0),
                    1000,
                    "info"))
            .clock(clock)
            .store(store)
            .cluster(ClusterSettings.defaults().withSnapshotDir(Optional.of(dir)))
            .start();

    assertThat(duringRestore.get())
        .as("a call while the snapshot loads is not answered from a fresh bucket")
        .doesNotStartWith("decided");
    assertThat(call(port, "spent")).isEqualTo("decided OVER_LIMIT remaining 0");
  }

  /** Returns what a one-hit call on {@code key} got: the decision, or the status it failed with. */
  private static String call(int port, String key) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    try {
      RateLimitResp r =
          V1Grpc.newBlockingStub(channel)
              .withDeadlineAfter(5, TimeUnit.SECONDS)
              .getRateLimits(
                  GetRateLimitsReq.newBuilder()
                      .addRequests(
                          RateLimitReq.newBuilder()
                              .setName("n")
                              .setUniqueKey(key)
                              .setHits(1)
                              .setLimit(5)
                              .setDuration(600_000))
                      .build())
              .getResponses(0);
      return r.getError().isEmpty()
          ? "decided " + r.getStatus() + " remaining " + r.getRemaining()
          : "error " + r.getError();
    } catch (StatusRuntimeException e) {
      return "failed " + e.getStatus().getCode();
    } finally {
      channel.shutdownNow();
    }
  }

  /** A store that runs {@code during} once, when the restore first writes the spent key. */
  private static final class CallingDuringRestore extends ForwardingBucketStore {
    private final Runnable during;
    private boolean ran;

    CallingDuringRestore(BucketStore store, Runnable during) {
      super(store);
      this.during = during;
    }

    @Override
    public RateLimitResponse update(
        String key, long at, Function<BucketState, Decision> update) {
      if (key.equals(SPENT.hashKey()) && !ran) {
        ran = true;
        during.run();
      }
      return super.update(key, at, update);
    }
  }
}
