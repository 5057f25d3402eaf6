package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class NodeShutdownHookTest {

  private final NodeShutdownHook hook = NodeShutdownHook.unregistered();
  private final AtomicInteger stops = new AtomicInteger();

  @Test
  void run_whileTheNodeStarts_waitsForTheStartThenStopsTheNode() throws Exception {
    Thread signal = new Thread(hook::run, "test-shutdown");
    signal.start();

    signal.join(200);
    assertThat(signal.isAlive()).as("waiting for the start to end").isTrue();
    assertThat(stops).hasValue(0);

    hook.started(stops::incrementAndGet);
    signal.join(10_000);

    assertThat(signal.isAlive()).isFalse();
    assertThat(stops).as("the started node stopped once").hasValue(1);
  }

  @Test
  void run_afterTheStart_stopsTheNodeAtOnce() {
    hook.started(stops::incrementAndGet);

    hook.run();

    assertThat(stops).hasValue(1);
  }

  @Test
  void run_startFailed_returnsWithoutStoppingAnything() {
    hook.started(null);

    hook.run();

    assertThat(stops).hasValue(0);
  }
}
