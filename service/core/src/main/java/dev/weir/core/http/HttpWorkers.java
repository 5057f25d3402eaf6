package dev.weir.core.http;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The HTTP listener's workers: a fixed number of threads behind a queue of bounded length.
 *
 * <p>Design: the JDK server's dispatcher thread hands each exchange to this executor, and closes
 * the connection without an answer when {@code execute} throws. So a task that finds every thread
 * busy and the queue full is not rejected: it runs at once on the offering thread, marked as
 * {@linkplain #isOverflow() overflow}, and the listener answers it 503 without routing it. That
 * costs the dispatcher only the parsing of the request head and one small answer.
 */
final class HttpWorkers implements Executor {

  private static final ThreadLocal<Boolean> OVERFLOW = new ThreadLocal<>();

  private final ThreadPoolExecutor pool;

  /** Starts no threads yet; they are created as requests arrive, up to {@code settings.threads()}. */
  HttpWorkers(HttpSettings settings) {
    BlockingQueue<Runnable> queue =
        settings.maxQueue() == 0
            ? new SynchronousQueue<>()
            : new ArrayBlockingQueue<>(settings.maxQueue());
    AtomicInteger count = new AtomicInteger();
    this.pool =
        new ThreadPoolExecutor(
            settings.threads(),
            settings.threads(),
            60,
            TimeUnit.SECONDS,
            queue,
            runnable -> {
              Thread thread = new Thread(runnable, "weir-http-" + count.incrementAndGet());
              thread.setDaemon(true);
              return thread;
            });
  }

  /** Returns whether the current thread runs an exchange that found the workers saturated. */
  static boolean isOverflow() {
    return OVERFLOW.get() != null;
  }

  @Override
  public void execute(Runnable task) {
    try {
      pool.execute(task);
    } catch (RejectedExecutionException e) {
      OVERFLOW.set(Boolean.TRUE);
      try {
        task.run();
      } finally {
        OVERFLOW.remove();
      }
    }
  }

  /** Returns the number of requests waiting for a worker. */
  int queued() {
    return pool.getQueue().size();
  }

  /** Lets the workers finish what they hold and end. */
  void shutdown() {
    pool.shutdown();
  }
}
