package dev.weir.core.http;

import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;

/**
 * The capacity of the HTTP listener: how many requests it works on at once and how many more may
 * wait for a worker. A request arriving when both are used up is answered 503 at once.
 *
 * @param threads worker threads, each answering one request at a time ({@code WEIR_HTTP_THREADS})
 * @param maxQueue requests that may wait for a worker, at least 1 ({@code WEIR_HTTP_MAX_QUEUE}); a
 *     queue of 0 is not offered because a hand-off queue refuses whenever no idle worker is
 *     waiting at that instant, answering 503 while capacity is free
 */
public record HttpSettings(int threads, int maxQueue) {

  /** {@code WEIR_HTTP_THREADS}. */
  public static final EnvVar THREADS = EnvVar.of("WEIR_HTTP_THREADS");

  /** {@code WEIR_HTTP_MAX_QUEUE}. */
  public static final EnvVar MAX_QUEUE = EnvVar.of("WEIR_HTTP_MAX_QUEUE");

  /** The default queue length per worker thread. */
  public static final int QUEUE_PER_THREAD = 32;

  /** The most worker threads allowed. */
  public static final int MAX_THREADS = 1024;

  /** The shortest queue allowed. */
  public static final int MIN_QUEUE_LENGTH = 1;

  /** The longest queue allowed. */
  public static final int MAX_QUEUE_LENGTH = 1_000_000;

  /** Checks the ranges. */
  public HttpSettings {
    if (threads < 1 || threads > MAX_THREADS) {
      throw new IllegalArgumentException(
          "threads is " + threads + "; it must be from 1 to " + MAX_THREADS);
    }
    if (maxQueue < MIN_QUEUE_LENGTH || maxQueue > MAX_QUEUE_LENGTH) {
      throw new IllegalArgumentException(
          "maxQueue is "
              + maxQueue
              + "; it must be from "
              + MIN_QUEUE_LENGTH
              + " to "
              + MAX_QUEUE_LENGTH);
    }
  }

  /**
   * Returns the defaults on this machine: 4 threads per CPU (at least 8), each with {@value
   * #QUEUE_PER_THREAD} queue places.
   */
  public static HttpSettings defaults() {
    return forThreads(defaultThreads());
  }

  /** Returns {@code threads} threads with the default queue length for them. */
  public static HttpSettings forThreads(int threads) {
    return new HttpSettings(threads, threads * QUEUE_PER_THREAD);
  }

  /** Reads the settings from {@code env}; an unset queue length follows the thread count. */
  public static HttpSettings from(EnvReader env) {
    int threads = env.intInRange(THREADS, defaultThreads(), 1, MAX_THREADS);
    int queue =
        env.intInRange(
            MAX_QUEUE,
            Math.min(MAX_QUEUE_LENGTH, threads * QUEUE_PER_THREAD),
            MIN_QUEUE_LENGTH,
            MAX_QUEUE_LENGTH);
    return new HttpSettings(threads, queue);
  }

  private static int defaultThreads() {
    return Math.max(8, 4 * Runtime.getRuntime().availableProcessors());
  }
}
