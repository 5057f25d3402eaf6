package dev.weir.client;

import com.google.protobuf.CodedOutputStream;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * Coalesces checks into {@code GetRateLimits} calls.
 *
 * <p>The first check queued into an empty batch starts the window; when it ends, everything queued
 * so far goes out in one call. A batch that reaches {@code maxBatch} items or {@code maxBatchBytes}
 * bytes on the wire goes out at once without waiting, and a check that would take the batch over
 * {@code maxBatchBytes} sends the batch before it is queued, so that a check too large for the
 * node's message limit fails its call alone instead of the checks queued with it. A zero window
 * sends each {@link #add} alone, at once. Each call's responses complete the futures of its items
 * by position; a failed call, or one answering a different number of responses, fails all of them
 * with the same typed exception, so no future is left waiting.
 */
final class CheckBatcher {

  /** A queued check and the future its response completes. */
  record Pending(RateLimitReq request, CompletableFuture<RateLimitResp> response) {}

  /**
   * Sends one batch: completes with one response per request, in order, or fails with a {@link
   * WeirException}.
   */
  interface Sender extends Function<List<RateLimitReq>, CompletableFuture<List<RateLimitResp>>> {}

  private final Duration window;
  private final int maxBatch;
  private final int maxBatchBytes;
  private final BatchScheduler scheduler;
  private final Sender sender;
  private final Object lock = new Object();
  private List<Pending> pending = new ArrayList<>();
  private long pendingBytes;
  private BatchScheduler.Task timer;
  private boolean closed;
  private int starting;
  private List<Runnable> whenIdle = new ArrayList<>();

  CheckBatcher(
      Duration window, int maxBatch, int maxBatchBytes, BatchScheduler scheduler, Sender sender) {
    this.window = window;
    this.maxBatch = maxBatch;
    this.maxBatchBytes = maxBatchBytes;
    this.scheduler = scheduler;
    this.sender = sender;
  }

  /**
   * Queues {@code items}, sending every batch that fills up or that the next item would take over
   * {@code maxBatchBytes} (and, with a zero window, the rest).
   */
  void add(List<Pending> items) {
    int[] sizes = new int[items.size()];
    for (int i = 0; i < sizes.length; i++) {
      sizes[i] = wireSize(items.get(i).request());
    }
    List<List<Pending>> ready = new ArrayList<>();
    try {
      synchronized (lock) {
        for (int i = 0; i < sizes.length; i++) {
          Pending item = items.get(i);
          int bytes = sizes[i];
          if (!pending.isEmpty() && pendingBytes + bytes > maxBatchBytes) {
            ready.add(takeLocked());
          }
          pending.add(item);
          pendingBytes += bytes;
          if (pending.size() >= maxBatch || pendingBytes >= maxBatchBytes) {
            ready.add(takeLocked());
          }
        }
        if (!pending.isEmpty()) {
          if (window.isZero() || closed) {
            ready.add(takeLocked());
          } else if (timer == null) {
            timer = scheduler.schedule(this::flush, window);
          }
        }
      }
    } finally {
      ready.forEach(this::send);
    }
  }

  /**
   * Sends whatever is queued and, from now on, each call's items at once: the client is closing
   * (its timer may never run again) or the member left the ring, and a check that raced with this
   * must still be sent.
   */
  void close() {
    synchronized (lock) {
      closed = true;
    }
    flush();
  }

  /**
   * Runs {@code action} once every batch taken from the queue has had its call started: at once
   * when none is waiting to start, else on the thread that starts the last. Shutting a closed
   * batcher's channel down in {@code action} lets a batch its timer took just before the close
   * complete, as started calls do, instead of failing on the shut-down channel.
   */
  void whenIdle(Runnable action) {
    synchronized (lock) {
      if (starting > 0) {
        whenIdle.add(action);
        return;
      }
    }
    action.run();
  }

  /** Returns whether every batch taken from the queue has had its call started. */
  boolean idle() {
    synchronized (lock) {
      return starting == 0;
    }
  }

  /** Sends whatever is queued now. */
  void flush() {
    List<Pending> batch;
    synchronized (lock) {
      if (pending.isEmpty()) {
        return;
      }
      batch = takeLocked();
    }
    send(batch);
  }

  private List<Pending> takeLocked() {
    List<Pending> batch = pending;
    pending = new ArrayList<>();
    pendingBytes = 0;
    starting++;
    if (timer != null) {
      timer.cancel();
      timer = null;
    }
    return batch;
  }

  /** Returns the bytes {@code request} takes in a {@code GetRateLimitsReq}: tag, length, body. */
  private static int wireSize(RateLimitReq request) {
    return CodedOutputStream.computeMessageSize(1, request);
  }

  private void send(List<Pending> batch) {
    List<RateLimitReq> requests = new ArrayList<>(batch.size());
    for (Pending p : batch) {
      requests.add(p.request());
    }
    CompletableFuture<List<RateLimitResp>> call;
    try {
      call = sender.apply(requests);
    } catch (RuntimeException e) {
      call = CompletableFuture.failedFuture(e);
    } finally {
      started();
    }
    call.whenComplete(
        (responses, failure) -> {
          // The caller's future fails with the WeirException itself, as documented, not the
          // CompletionException a dependent stage wraps it in.
          Throwable error = WeirException.unwrapped(failure);
          if (error == null && responses.size() != batch.size()) {
            error =
                new WeirException(
                    io.grpc.Status.Code.INTERNAL,
                    "",
                    "the node answered "
                        + responses.size()
                        + " responses to "
                        + batch.size()
                        + " checks; expected one per check",
                    null);
          }
          for (int i = 0; i < batch.size(); i++) {
            if (error != null) {
              batch.get(i).response().completeExceptionally(error);
            } else {
              batch.get(i).response().complete(responses.get(i));
            }
          }
        });
  }

  /** Counts a taken batch's call as started, running the idle actions when it was the last. */
  private void started() {
    List<Runnable> due;
    synchronized (lock) {
      starting--;
      if (starting > 0 || whenIdle.isEmpty()) {
        return;
      }
      due = whenIdle;
      whenIdle = new ArrayList<>();
    }
    due.forEach(Runnable::run);
  }
}
