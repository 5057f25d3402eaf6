package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.netty.shaded.io.netty.channel.DefaultEventLoop;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link EventLoopRoundEnd} on a Netty event loop of grpc-java's shaded Netty and off one. */
class EventLoopRoundEndTest {

  private final DefaultEventLoop loop = new DefaultEventLoop();

  @AfterEach
  void stop() {
    loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
  }

  @Test
  void defer_onAnEventLoop_runsAfterTheCurrentTaskOnTheSameThread() throws Exception {
    List<String> order = new CopyOnWriteArrayList<>();
    List<Boolean> deferred = new CopyOnWriteArrayList<>();

    loop.submit(
            () -> {
              deferred.add(
                  EventLoopRoundEnd.INSTANCE.defer(
                      () -> order.add("deferred on loop " + loop.inEventLoop())));
              order.add("rest of the round");
            })
        .get(5, TimeUnit.SECONDS);
    loop.submit(() -> {}).get(5, TimeUnit.SECONDS);

    assertThat(deferred).containsExactly(true);
    assertThat(order).containsExactly("rest of the round", "deferred on loop true");
  }

  @Test
  void defer_offAnEventLoop_refusedAndNothingRuns() {
    List<String> order = new CopyOnWriteArrayList<>();

    assertThat(EventLoopRoundEnd.INSTANCE.defer(() -> order.add("ran"))).isFalse();
    assertThat(order).isEmpty();
  }
}
