package dev.weir.core.http;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The HTTP listener's workers: a fixed number of threads behind a queue of bounded length, and a
 * small separate pool that answers the requests the workers cannot take.
 *
 * <p>Design: the JDK server's single dispatcher thread hands each exchange to this executor. The
 * exchange task reads the request head (over HTTPS it first does the TLS handshake), so it must
 * never run on the dispatcher: a slow or stalled client would freeze the whole listener. A task
 * that finds every worker busy and the queue full goes to the refusal pool ({@value
 * #REFUSAL_THREADS} threads, {@value #REFUSAL_QUEUE} waiting), which runs it marked as {@linkplain
 * #isOverflow() overflow}: the listener then answers 503 or, for a route served when saturated,
 * serves it. When the refusal pool is full too, {@code execute} throws and the JDK server closes
 * the connection without an answer; that request is reported to {@code onDropped}.
 */
final class HttpWorkers implements Executor {

  /** Threads answering requests the workers cannot take. */
  static final int REFUSAL_THREADS = 2;

  /** Requests that may wait for a refusal thread. */
  static final int REFUSAL_QUEUE = 64;

  private static final ThreadLocal<Boolean> OVERFLOW = new ThreadLocal<>();

  private final ThreadPoolExecutor pool;
  private final ThreadPoolExecutor refusals;
  private final Runnable onDropped;
  private final AtomicInteger overflowRunning = new AtomicInteger();

  /**
   * Creates workers of {@code settings.threads()} threads behind a queue of {@code
   * settings.maxQueue()}, with a refusal pool of {@code refusalThreads} threads behind a queue of
   * {@code refusalQueue}. Starts no threads yet; they are created as requests arrive. {@code
   * onDropped} runs for each request closed without an answer.
   */
  HttpWorkers(HttpSettings settings, int refusalThreads, int refusalQueue, Runnable onDropped) {
    this.pool = fixedPool(settings.threads(), settings.maxQueue(), "weir-http-");
    this.refusals = fixedPool(refusalThreads, refusalQueue, "weir-http-refusal-");
    this.onDropped = onDropped;
  }

  private static ThreadPoolExecutor fixedPool(int threads, int queue, String namePrefix) {
    AtomicInteger count = new AtomicInteger();
    return new ThreadPoolExecutor(
        threads,
        threads,
        60,
        TimeUnit.SECONDS,
        new ArrayBlockingQueue<>(queue),
        runnable -> {
          Thread thread = new Thread(runnable, namePrefix + count.incrementAndGet());
          thread.setDaemon(true);
          return thread;
        });
  }

  /** Returns whether the current thread runs an exchange that found the workers saturated. */
  static boolean isOverflow() {
    return OVERFLOW.get() != null;
  }

  /**
   * Runs {@code task} on a worker, or marked as overflow on a refusal thread when the workers are
   * saturated.
   *
   * @throws RejectedExecutionException when the refusal threads are saturated too, or stopped
   */
  @Override
  public void execute(Runnable task) {
    try {
      pool.execute(task);
    } catch (RejectedExecutionException saturated) {
      try {
        refusals.execute(() -> runAsOverflow(task));
      } catch (RejectedExecutionException e) {
        if (!refusals.isShutdown()) {
          onDropped.run();
        }
        throw e;
      }
    }
  }

  private void runAsOverflow(Runnable task) {
    OVERFLOW.set(Boolean.TRUE);
    overflowRunning.incrementAndGet();
    try {
      task.run();
    } finally {
      overflowRunning.decrementAndGet();
      OVERFLOW.remove();
    }
  }

  /** Returns the number of requests waiting for a worker. */
  int queued() {
    return pool.getQueue().size();
  }

  /** Returns the number of overflow exchanges running on refusal threads. */
  int overflowRunning() {
    return overflowRunning.get();
  }

  /** Returns the number of overflow exchanges waiting for a refusal thread. */
  int overflowQueued() {
    return refusals.getQueue().size();
  }

  /** Lets the workers and refusal threads finish what they hold and end. */
  void shutdown() {
    pool.shutdown();
    refusals.shutdown();
  }
}
