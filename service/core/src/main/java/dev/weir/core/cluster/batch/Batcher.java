package dev.weir.core.cluster.batch;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * A queue that groups items bound for one destination into batches and completes each item's future
 * with its own answer.
 *
 * <p>Design: a batch is sent when {@code batchLimit} items are queued (on the thread that queued the
 * last one) or {@code batchWait} after the first item of the batch was queued (on the scheduler's
 * thread), whichever comes first. A timer belongs to one batch: the generation counter stops a timer
 * whose batch already went out by size from sending the next batch early. The sender returns one answer
 * per item in order; a failed send, or an answer list of the wrong length, fails every item of that
 * batch. Each item is in exactly one batch, so each future completes exactly once. {@link #close()}
 * sends what is queued and refuses new items; {@link #abandon} fails what is queued instead.
 *
 * @param <T> the item type
 * @param <R> the answer type
 */
public final class Batcher<T, R> implements AutoCloseable {

  private final int batchLimit;
  private final Duration batchWait;
  private final Scheduler scheduler;
  private final Function<List<T>, CompletableFuture<List<R>>> sender;

  private final Object lock = new Object();
  private List<T> items = new ArrayList<>();
  private List<CompletableFuture<R>> futures = new ArrayList<>();
  private long generation;
  private Scheduler.Task timer;
  private boolean closed;

  /**
   * Creates a batcher.
   *
   * @param batchLimit the most items per batch, 1..1000
   * @param batchWait how long the first queued item waits for others
   * @param scheduler runs the wait timers
   * @param sender sends one batch and completes with one answer per item, in order
   */
  public Batcher(
      int batchLimit,
      Duration batchWait,
      Scheduler scheduler,
      Function<List<T>, CompletableFuture<List<R>>> sender) {
    if (batchLimit < 1 || batchLimit > 1000) {
      throw new IllegalArgumentException("batchLimit must be within 1..1000, got " + batchLimit);
    }
    this.batchLimit = batchLimit;
    this.batchWait = batchWait;
    this.scheduler = scheduler;
    this.sender = sender;
  }

  /**
   * Queues {@code item}; the future completes with its answer, or fails with its batch. The first item
   * of a batch starts its timer before it is queued: if the scheduler refuses (it was shut down), that
   * item fails with the scheduler's exception and nothing is queued.
   */
  public CompletableFuture<R> submit(T item) {
    CompletableFuture<R> future = new CompletableFuture<>();
    List<T> fullItems = null;
    List<CompletableFuture<R>> fullFutures = null;
    synchronized (lock) {
      if (closed) {
        future.completeExceptionally(new IllegalStateException("batcher is closed"));
        return future;
      }
      if (items.isEmpty() && batchLimit > 1) {
        long gen = generation;
        try {
          timer = scheduler.schedule(() -> flushGeneration(gen), batchWait);
        } catch (RuntimeException e) {
          future.completeExceptionally(e);
          return future;
        }
      }
      items.add(item);
      futures.add(future);
      if (items.size() >= batchLimit) {
        fullItems = items;
        fullFutures = futures;
        takeQueue();
      }
    }
    if (fullItems != null) {
      send(fullItems, fullFutures);
    }
    return future;
  }

  /** Returns the number of items waiting for their batch to be sent. */
  public int queued() {
    synchronized (lock) {
      return items.size();
    }
  }

  /** Sends whatever is queued now. */
  public void flush() {
    List<T> out;
    List<CompletableFuture<R>> outFutures;
    synchronized (lock) {
      if (items.isEmpty()) {
        return;
      }
      out = items;
      outFutures = futures;
      takeQueue();
    }
    send(out, outFutures);
  }

  /** Sends what is queued and refuses items from now on. */
  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
    }
    flush();
  }

  /** Fails every queued item with {@code reason} without sending it, and refuses items from now on. */
  public void abandon(RuntimeException reason) {
    List<CompletableFuture<R>> dropped;
    synchronized (lock) {
      closed = true;
      dropped = futures;
      takeQueue();
    }
    dropped.forEach(f -> f.completeExceptionally(reason));
  }

  /**
   * Sends the batch of generation {@code gen}, unless it already went out by size: the check and the
   * take are one critical section, so a newer batch is never sent by an older batch's timer.
   */
  private void flushGeneration(long gen) {
    List<T> out;
    List<CompletableFuture<R>> outFutures;
    synchronized (lock) {
      if (gen != generation || items.isEmpty()) {
        return;
      }
      out = items;
      outFutures = futures;
      takeQueue();
    }
    send(out, outFutures);
  }

  // Caller holds the lock.
  private void takeQueue() {
    items = new ArrayList<>();
    futures = new ArrayList<>();
    generation++;
    if (timer != null) {
      timer.cancel();
      timer = null;
    }
  }

  private void send(List<T> batch, List<CompletableFuture<R>> batchFutures) {
    CompletableFuture<List<R>> sent;
    try {
      sent = sender.apply(batch);
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    sent.whenComplete(
        (answers, error) -> {
          if (error == null && answers.size() != batchFutures.size()) {
            error =
                new IllegalStateException(
                    "expected " + batchFutures.size() + " answers, got " + answers.size());
          }
          for (int i = 0; i < batchFutures.size(); i++) {
            if (error != null) {
              batchFutures.get(i).completeExceptionally(error);
            } else {
              batchFutures.get(i).complete(answers.get(i));
            }
          }
        });
  }
}
