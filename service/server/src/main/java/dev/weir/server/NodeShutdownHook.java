package dev.weir.server;

import java.util.concurrent.CountDownLatch;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JVM shutdown hook that stops a node, registered before the node starts: a SIGTERM that
 * arrives while the node starts (its snapshots already restored, their files consumed) says so to
 * the start ({@link #stopping()}), which cuts its warm-up short and fails before joining, waits
 * for the start to end and then stops the node if it started; either way the node writes its
 * snapshot again instead of ending the process with the restored buckets in memory only.
 */
final class NodeShutdownHook {

  private static final Logger LOG = LoggerFactory.getLogger(NodeShutdownHook.class);

  private final CountDownLatch settled = new CountDownLatch(1);
  private volatile Runnable stop;
  private volatile boolean stopping;

  private NodeShutdownHook() {}

  /** Returns a hook registered with the JVM, waiting for {@link #started}. */
  private static NodeShutdownHook register() {
    NodeShutdownHook hook = new NodeShutdownHook();
    Runtime.getRuntime().addShutdownHook(new Thread(hook::run, "weir-shutdown"));
    return hook;
  }

  /**
   * Starts a node with {@code start} under a hook registered first, which stops the node with
   * {@code stop} when the JVM shuts down; returns the node, or null when {@code start} gave none.
   */
  static <T> T startStoppingOnExit(Function<BooleanSupplier, T> start, Consumer<T> stop) {
    return register().startStopping(start, stop);
  }

  /**
   * Starts a node with {@code start}, given what says whether this hook has run, and records how
   * {@code stop} stops it; returns the node, or null when {@code start} gave none.
   */
  <T> T startStopping(Function<BooleanSupplier, T> start, Consumer<T> stop) {
    T node = null;
    try {
      node = start.apply(this::stopping);
    } finally {
      T started = node;
      started(started == null ? null : () -> stop.accept(started));
    }
    return node;
  }

  /** Returns a hook not registered with the JVM, for tests. */
  static NodeShutdownHook unregistered() {
    return new NodeShutdownHook();
  }

  /**
   * Records how to stop the node that started, or null when it did not start; call exactly once,
   * whether the start succeeded or not, or the hook waits for ever.
   */
  void started(Runnable stopNode) {
    this.stop = stopNode;
    settled.countDown();
  }

  /** Returns whether this hook has run: the process was told to stop. */
  boolean stopping() {
    return stopping;
  }

  /** Waits until the start ended, then stops the node if it started. */
  void run() {
    stopping = true;
    if (settled.getCount() > 0) {
      LOG.info("stop requested while the node starts; it stops without joining if still warming up");
    }
    boolean interrupted = false;
    while (true) {
      try {
        settled.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    Runnable stopNode = stop;
    if (stopNode != null) {
      stopNode.run();
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
