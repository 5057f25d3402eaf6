package dev.weir.core.cluster.batch;

import dev.weir.core.time.Clock;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A queue that groups items bound for one destination into batches and completes each item's future
 * with its own answer.
 *
 * <p>Design: batches form only while a call to the destination is in flight, or within the
 * submitting thread's current round of work ({@link RoundEnd}), so no item waits on a timer. An
 * item submitted while no call is in flight leaves at once, alone or with whatever is queued, on
 * the submitting thread; or, when that thread works in rounds (a transport's event loop), at the
 * end of the round, with every item that round brings in. Items submitted while a call is in
 * flight queue behind it, and the queue leaves as one batch when a call completes: at once on the
 * thread that completes it, or, when that thread works in rounds, at the end of its round, with
 * the items the same round brings in (so under load a batch gathers what arrived during the call
 * before it and during the round that read its answer); a round that completes several calls
 * sends a batch for each call it freed, while items remain. Only the thread whose round end the
 * queue waits for holds its items for it: an item submitted, or a call completed, on any other
 * thread while that round end is pending is not held for it (that thread may be blocked; see {@code
 * Weir}'s note on joining a future on a transport thread), and the queue leaves as if no round end
 * were pending, at once when no call is in flight. The queue also leaves at once when it
 * holds {@code batchLimit} items, or when an item is submitted and the last call went out at least
 * {@code batchWait} ago (while items keep coming, a slow call does not hold those behind it longer
 * than that), as long as fewer than {@code maxInFlight} calls are out. The queue is looked at on
 * submits and completions only, never on a timer (one would wake once per batch under load): items
 * queued behind a call with no item after them leave when a call completes, so a sender with a
 * deadline bounds that wait by it. At {@code maxInFlight} calls out items only queue, and at {@code
 * maxQueued} queued items a new one fails at once with a {@link QueueFullException} (the destination
 * is slower than the items arriving for it). Each call completing sends the next batch, so while at
 * most {@code maxInFlight} batches of {@code batchLimit} items wait, a queued item leaves once the
 * calls in flight when it came have completed, and a sender with a deadline bounds its whole wait by
 * twice that deadline; an item with more batches ahead of it waits a deadline more for each further
 * {@code maxInFlight} of them ({@link #maxQueued} allows that many only up to {@link #MIN_QUEUED}
 * items, so one whole request fits). A batch
 * never holds more than {@code batchLimit} items. The sender returns one answer per item in order;
 * a failed send, or an answer list of the wrong length, fails every item of that batch. A batch
 * that completes during its own send (the sender fails it at once) lets the next one leave in a
 * loop on the sending thread, not by recursion, so a long queue failing batch after batch needs no
 * stack frame per batch; a batch's items complete once the batch after it is sent, and of the
 * batches {@link #submitAll} sends together, one that fails during its own send frees its call to
 * the rest of the queue, and completes its items, only once all of them have left, in order (one
 * whose call ends on another thread while the later ones are still being sent frees its call at
 * once, as any batch does). Each item is in
 * exactly one batch, so each future completes exactly once. {@link #close()} sends what is queued
 * and refuses new items; {@link #abandon} fails what is queued instead.
 *
 * @param <T> the item type
 * @param <R> the answer type
 */
public final class Batcher<T, R> implements AutoCloseable {

  /** The most calls in flight to one destination at once. */
  public static final int MAX_IN_FLIGHT = 8;

  /**
   * The fewest items that may wait for one destination: the 1000 items of the largest request a
   * caller may send (Gubernator's limit), so that one whole request always fits in the queue.
   */
  public static final int MIN_QUEUED = 1000;

  /**
   * Returns the most items that wait for one destination before new ones are refused, by default:
   * as many as {@link #MAX_IN_FLIGHT} batches of {@code batchLimit} hold, one for each call in
   * flight, so that a queued item leaves by the time every call in flight when it came has
   * completed; and never fewer than {@link #MIN_QUEUED}, so that a small {@code batchLimit} does
   * not refuse one large request, or a burst, while the destination keeps up.
   */
  public static int maxQueued(int batchLimit) {
    return Math.max(MAX_IN_FLIGHT * batchLimit, MIN_QUEUED);
  }

  private final int batchLimit;
  private final long batchWaitNanos;
  private final int maxInFlight;
  private final int maxQueued;
  private final Clock clock;
  private final RoundEnd roundEnd;
  private final Function<List<T>, CompletableFuture<List<R>>> sender;

  private static final VarHandle STATE;

  static {
    try {
      STATE = MethodHandles.lookup().findVarHandle(Batcher.Batch.class, "state", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Object lock = new Object();
  private List<T> items = new ArrayList<>();
  private List<CompletableFuture<R>> futures = new ArrayList<>();
  private int inFlight;
  private long lastSentNanos;
  private boolean closed;
  /** Whether the queue leaves at the end of a submitting thread's round. */
  private boolean leavesAtRoundEnd;
  /** The thread whose round end the queue leaves at, while {@link #leavesAtRoundEnd}. */
  private Thread roundEndThread;

  /**
   * Creates a batcher with the default bounds ({@link #MAX_IN_FLIGHT}, {@link #maxQueued}).
   *
   * @param batchLimit the most items per batch, 1..1000
   * @param batchWait how long queued items wait behind the last call sent before an item submitted
   *     opens another call
   * @param clock the monotonic time of the last call sent
   * @param sender sends one batch and completes with one answer per item, in order
   */
  public Batcher(
      int batchLimit,
      Duration batchWait,
      Clock clock,
      Function<List<T>, CompletableFuture<List<R>>> sender) {
    this(batchLimit, batchWait, MAX_IN_FLIGHT, maxQueued(batchLimit), clock, RoundEnd.NONE, sender);
  }

  /**
   * Creates a batcher.
   *
   * @param batchLimit the most items per batch, 1..1000
   * @param batchWait how long queued items wait behind the last call sent before an item submitted
   *     opens another call
   * @param maxInFlight the most calls in flight at once, at least 1
   * @param maxQueued the most items waiting to be sent, at least {@code batchLimit}
   * @param clock the monotonic time of the last call sent
   * @param roundEnd where an item submitted while no call is in flight waits for the others of its
   *     round ({@link RoundEnd#NONE}: it leaves at once)
   * @param sender sends one batch and completes with one answer per item, in order
   */
  public Batcher(
      int batchLimit,
      Duration batchWait,
      int maxInFlight,
      int maxQueued,
      Clock clock,
      RoundEnd roundEnd,
      Function<List<T>, CompletableFuture<List<R>>> sender) {
    if (batchLimit < 1 || batchLimit > 1000) {
      throw new IllegalArgumentException("batchLimit must be within 1..1000, got " + batchLimit);
    }
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight must be at least 1, got " + maxInFlight);
    }
    if (maxQueued < batchLimit) {
      throw new IllegalArgumentException(
          "maxQueued must be at least batchLimit (" + batchLimit + "), got " + maxQueued);
    }
    this.batchLimit = batchLimit;
    this.batchWaitNanos = batchWait.toNanos();
    this.maxInFlight = maxInFlight;
    this.maxQueued = maxQueued;
    this.clock = clock;
    this.roundEnd = roundEnd;
    this.sender = sender;
  }

  /**
   * Queues {@code item} and sends the queue now when the rules above say so; the future completes
   * with the item's answer, or fails with its batch, or at once with a {@link QueueFullException}.
   */
  public CompletableFuture<R> submit(T item) {
    CompletableFuture<R> future = new CompletableFuture<>();
    Batch out;
    synchronized (lock) {
      if (closed) {
        future.completeExceptionally(new IllegalStateException("batcher is closed"));
        return future;
      }
      if (items.size() >= maxQueued) {
        future.completeExceptionally(queueFull());
        return future;
      }
      items.add(item);
      futures.add(future);
      out = leavesNow() ? take() : null;
    }
    if (out != null) {
      send(out);
    }
    return future;
  }

  /**
   * Sends each item of {@code items} that {@code alone} picks with {@code sendAlone}, and queues the
   * others together with {@code submitAll} (before any is sent alone), so that they leave in one
   * batch; one future per item, in order.
   */
  public static <T, R> List<CompletableFuture<R>> submitAllButAlone(
      List<T> items,
      Predicate<T> alone,
      Function<T, CompletableFuture<R>> sendAlone,
      Function<List<T>, List<CompletableFuture<R>>> submitAll) {
    List<T> batchable = new ArrayList<>(items.size());
    for (T item : items) {
      if (!alone.test(item)) {
        batchable.add(item);
      }
    }
    List<CompletableFuture<R>> queued =
        batchable.isEmpty() ? List.of() : submitAll.apply(batchable);
    List<CompletableFuture<R>> out = new ArrayList<>(items.size());
    int next = 0;
    for (T item : items) {
      out.add(alone.test(item) ? sendAlone.apply(item) : queued.get(next++));
    }
    return out;
  }

  /**
   * Queues {@code batch} at once, so that its items leave together (in one batch when they fit
   * within {@code batchLimit} and the queue was empty), and sends as {@link #submit} does, a full
   * batch on each call free; one future per item, in order. Items that do not fit in the queue fail
   * at once.
   */
  public List<CompletableFuture<R>> submitAll(List<T> batch) {
    List<CompletableFuture<R>> out = new ArrayList<>(batch.size());
    Batch first = null;
    List<Batch> more = null;
    synchronized (lock) {
      for (T item : batch) {
        CompletableFuture<R> future = new CompletableFuture<>();
        out.add(future);
        if (closed) {
          future.completeExceptionally(new IllegalStateException("batcher is closed"));
        } else if (items.size() >= maxQueued) {
          future.completeExceptionally(queueFull());
        } else {
          items.add(item);
          futures.add(future);
          if (items.size() >= batchLimit && inFlight < maxInFlight) {
            if (first == null) {
              first = take();
            } else {
              more = more == null ? new ArrayList<>() : more;
              more.add(take());
            }
          }
        }
      }
      if (!items.isEmpty() && leavesNow()) {
        if (first == null) {
          first = take();
        } else {
          more = more == null ? new ArrayList<>() : more;
          more.add(take());
        }
      }
    }
    if (more != null) {
      sendInOrder(first, more);
    } else if (first != null) {
      send(first);
    }
    return out;
  }

  /** Returns the number of items waiting for their batch to be sent. */
  public int queued() {
    synchronized (lock) {
      return items.size();
    }
  }

  /** Returns the number of calls in flight. */
  public int inFlight() {
    synchronized (lock) {
      return inFlight;
    }
  }

  /** Sends whatever is queued now, in batches of at most {@code batchLimit}, whatever is in flight. */
  public void flush() {
    while (true) {
      Batch out;
      synchronized (lock) {
        if (items.isEmpty()) {
          return;
        }
        out = take();
      }
      send(out);
    }
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
      items = new ArrayList<>();
      futures = new ArrayList<>();
    }
    dropped.forEach(f -> f.completeExceptionally(reason));
  }

  // Caller holds the lock.
  private QueueFullException queueFull() {
    String bound =
        maxQueued == maxQueued(batchLimit)
            ? ": "
                + MAX_IN_FLIGHT
                + " × WEIR_BATCH_LIMIT ("
                + batchLimit
                + "), and never fewer than "
                + MIN_QUEUED
            : "";
    return new QueueFullException(maxQueued, bound, inFlight);
  }

  // Caller holds the lock; the item just queued is in items.
  private boolean leavesNow() {
    if (leavesAtRoundEnd) {
      if (roundEndThread == Thread.currentThread()) {
        return items.size() >= batchLimit && inFlight < maxInFlight;
      }
      // Another thread's round end: not waited for (that thread may be stuck), nor deferred twice.
      if (inFlight == 0) {
        return true;
      }
    } else if (inFlight == 0) {
      return !deferToRoundEnd();
    }
    if (inFlight >= maxInFlight) {
      return false;
    }
    return items.size() >= batchLimit || clock.monotonicNanos() - lastSentNanos >= batchWaitNanos;
  }

  // Caller holds the lock. Defers the queue to the end of the calling thread's round; false when
  // the thread works in no rounds.
  private boolean deferToRoundEnd() {
    if (roundEnd.defer(this::sendAtRoundEnd)) {
      leavesAtRoundEnd = true;
      roundEndThread = Thread.currentThread();
      return true;
    }
    return false;
  }

  /**
   * Sends what the round that deferred the queue left in it, one batch after another while fewer
   * than {@code maxInFlight} calls are out: a round that read several answers freed several calls.
   */
  private void sendAtRoundEnd() {
    Batch out;
    boolean more;
    synchronized (lock) {
      leavesAtRoundEnd = false;
      roundEndThread = null;
      out = mayTake() ? take() : null;
      more = mayTake();
    }
    while (out != null) {
      send(out);
      if (!more) {
        return;
      }
      synchronized (lock) {
        out = mayTake() ? take() : null;
        more = mayTake();
      }
    }
  }

  // Caller holds the lock.
  private boolean mayTake() {
    return !items.isEmpty() && inFlight < maxInFlight;
  }

  // Caller holds the lock and items is not empty.
  private Batch take() {
    Batch out;
    if (items.size() <= batchLimit) {
      out = new Batch(items, futures);
      items = new ArrayList<>();
      futures = new ArrayList<>();
    } else {
      List<T> head = items.subList(0, batchLimit);
      List<CompletableFuture<R>> headFutures = futures.subList(0, batchLimit);
      out = new Batch(new ArrayList<>(head), new ArrayList<>(headFutures));
      head.clear();
      headFutures.clear();
    }
    inFlight++;
    lastSentNanos = clock.monotonicNanos();
    return out;
  }

  private void send(Batch batch) {
    sendThenComplete(batch, null);
  }

  /**
   * Sends {@code first} and then each of {@code more} as one send: a batch that completes during its
   * own send frees its call, and its items complete, only once every batch after it has been sent,
   * so the queue's remaining items leave after all of them.
   */
  private void sendInOrder(Batch first, List<Batch> more) {
    List<Batch> finished = null;
    for (int i = -1; i < more.size(); i++) {
      Batch batch = i < 0 ? first : more.get(i);
      sendOnce(batch);
      if (batch.sendReturned()) {
        finished = finished == null ? new ArrayList<>(more.size() + 1) : finished;
        finished.add(batch);
      }
    }
    if (finished != null) {
      for (Batch batch : finished) {
        sendThenComplete(release(), batch);
      }
    }
  }

  /** Hands {@code batch} to the sender and its call's outcome to {@code batch}. */
  private void sendOnce(Batch batch) {
    CompletableFuture<List<R>> sent;
    try {
      sent = sender.apply(batch.items);
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    if (sent == null) {
      sent = CompletableFuture.failedFuture(new IllegalStateException("sender returned no call"));
    }
    sent.whenComplete(batch);
  }

  /**
   * Sends {@code batch}, completes the items of {@code finished} (when not null) once it is sent,
   * and goes on in a loop while a batch completes during its own send (a failed future, a peer
   * refusing at once): that batch's items complete once the next batch it lets leave is sent. So
   * a chain of batches failing as they are sent takes no stack frame per batch, and each next batch
   * leaves before the callers of the one before it run their continuations.
   */
  private void sendThenComplete(Batch batch, Batch finished) {
    while (batch != null) {
      sendOnce(batch);
      if (finished != null) {
        finished.complete();
      }
      finished = batch.sendReturned() ? batch : null;
      batch = finished == null ? null : release();
    }
    if (finished != null) {
      finished.complete();
    }
  }

  /**
   * Ends a call in flight: returns the queue's next batch when it leaves now, or null (it leaves at
   * the end of this thread's round, or at a later completion).
   */
  private Batch release() {
    synchronized (lock) {
      inFlight--;
      if (items.isEmpty()) {
        return null;
      }
      if (leavesAtRoundEnd
          ? roundEndThread != Thread.currentThread() // not held for another thread's round
          : !deferToRoundEnd()) {
        return take();
      }
    }
    return null;
  }

  /**
   * One batch sent: its items, their futures, and its outcome, which the call hands over either to
   * the thread still sending it (completed within the send: {@link #sendThenComplete} finishes it
   * in its loop) or, once the send returned, finishes on the thread that completes the call.
   */
  private final class Batch implements BiConsumer<List<R>, Throwable> {
    private static final int SENDING = 0;
    private static final int SENT = 1;
    private static final int COMPLETED_WHILE_SENDING = 2;

    private final List<T> items;
    private final List<CompletableFuture<R>> futures;
    /** {@link #SENDING} and on, through {@link #STATE}. */
    @SuppressWarnings("unused")
    private volatile int state;

    private List<R> answers;
    private Throwable error;

    private Batch(List<T> items, List<CompletableFuture<R>> futures) {
      this.items = items;
      this.futures = futures;
    }

    /** The call completed: hands the outcome to the sending thread, or finishes the batch here. */
    @Override
    public void accept(List<R> answers, Throwable error) {
      this.answers = answers;
      this.error = error;
      if (!STATE.compareAndSet(this, SENDING, COMPLETED_WHILE_SENDING)) {
        sendThenComplete(release(), this);
      }
    }

    /** The send returned: true when the call completed during it, for the sender to finish. */
    private boolean sendReturned() {
      return !STATE.compareAndSet(this, SENDING, SENT);
    }

    /** Completes each item with its answer, or fails every item with the call's error. */
    private void complete() {
      Throwable failure = error;
      if (failure == null && (answers == null || answers.size() != futures.size())) {
        failure =
            new IllegalStateException(
                "expected "
                    + futures.size()
                    + " answers, got "
                    + (answers == null ? "none" : answers.size()));
      }
      for (int i = 0; i < futures.size(); i++) {
        if (failure != null) {
          futures.get(i).completeExceptionally(failure);
        } else {
          futures.get(i).complete(answers.get(i));
        }
      }
    }
  }

  /** The queue to the destination is full: it answers more slowly than items arrive for it. */
  public static final class QueueFullException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    QueueFullException(int queued, String bound, int inFlight) {
      super(
          queued
              + " items (the most that may wait"
              + bound
              + ") already wait to be sent behind "
              + inFlight
              + " calls in flight: the peer answers more slowly than items arrive for it");
    }
  }
}
