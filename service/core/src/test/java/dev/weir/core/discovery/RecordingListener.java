package dev.weir.core.discovery;

import dev.weir.core.testkit.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/** A listener that records every peer set it receives, for tests. */
public final class RecordingListener implements Consumer<Set<String>> {
  private final List<Set<String>> received = new ArrayList<>();

  @Override
  public synchronized void accept(Set<String> peers) {
    received.add(peers);
  }

  /** Returns every set received so far, in order. */
  public synchronized List<Set<String>> received() {
    return List.copyOf(received);
  }

  /** Returns the last set received, or an empty set. */
  public synchronized Set<String> last() {
    return received.isEmpty() ? Set.of() : received.get(received.size() - 1);
  }

  /**
   * Polls {@code condition} until it holds or {@code limit} passes; for tests against real external
   * processes, where there is no clock to fake.
   */
  public static boolean eventually(Duration limit, BooleanSupplier condition) throws InterruptedException {
    return Await.holdsWithin(limit, condition);
  }
}
