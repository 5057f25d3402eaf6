package dev.weir.core.testkit;

import dev.weir.core.engine.BucketState;
import dev.weir.core.store.BucketStore;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * A store whose scans ({@code forEach}), once {@linkplain #hold() held}, wait until the test
 * {@linkplain #release() releases} them (at most 10 s), so a test can act while a hand-off scan is
 * under way.
 */
public final class ScanHoldingStore extends ForwardingBucketStore {

  private final CountDownLatch scanning = new CountDownLatch(1);
  private final CountDownLatch released = new CountDownLatch(1);
  private volatile boolean held;

  /** Creates a store passing every call to {@code delegate}, its scans not held yet. */
  public ScanHoldingStore(BucketStore delegate) {
    super(delegate);
  }

  /** Makes every later scan wait for {@link #release()}; once released, scans no longer wait. */
  public void hold() {
    held = true;
  }

  /** Returns whether a held scan has started within {@code seconds}. */
  public boolean awaitScanning(long seconds) throws InterruptedException {
    return scanning.await(seconds, TimeUnit.SECONDS);
  }

  /** Lets held scans, present and future, go on. */
  public void release() {
    released.countDown();
  }

  @Override
  public void forEach(BiConsumer<String, BucketState> action) {
    if (held) {
      scanning.countDown();
      try {
        released.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    super.forEach(action);
  }
}
