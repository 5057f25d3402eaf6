package dev.weir.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.snapshot.SnapshotDirectory;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.proto.gubernator.BucketSnapshot;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An embedded member with a snapshot directory whose start fails keeps what it restored. */
class WeirMemberSnapshotTest {

  private final FakeClock clock = new FakeClock();
  @TempDir Path dir;

  private SnapshotDirectory directory(String self) {
    return new SnapshotDirectory(
        dir, self, new PeerInputValidator(InputLimits.DEFAULTS, self), clock);
  }

  @Test
  void start_serverCannotBindAfterTheRestore_theSnapshotIsWrittenBack() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      String self = "127.0.0.1:" + taken.getLocalPort();
      InMemoryBucketStore before = new InMemoryBucketStore(clock);
      RateLimitRequest spent =
          RateLimitRequest.builder("n", "k").hits(5).limit(5).duration(600_000).build();
      new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), before, clock).decide(spent);
      directory(self).save(before);
      WeirMember member =
          Weir.builder()
              .advertiseAddress(self)
              .clock(clock)
              .store(new InMemoryBucketStore(clock))
              .clusterSettings(ClusterSettings.defaults().withSnapshotDir(Optional.of(dir)))
              .serverBuilder(
                  NettyServerBuilder.forAddress(
                      new InetSocketAddress("127.0.0.1", taken.getLocalPort())))
              .build();

      assertThatThrownBy(member::start).hasMessageContaining("bind");

      List<BucketSnapshot> kept = new ArrayList<>();
      directory("127.0.0.1:1").load(kept::add);
      assertThat(kept).extracting(BucketSnapshot::getKey).containsExactly(spent.hashKey());
    }
  }
}
