package dev.weir.core.cluster.peer;

import dev.weir.core.cluster.batch.Batcher;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The {@code ForwardBatches} stream from this node to one peer: forwarded batches go out on one
 * long-lived call and each completes when the answer with its id comes back.
 *
 * <p>Design: the stream is opened by the first batch and again by the first batch after it ended;
 * batches sent on one stream wait for their answers in a table of that stream only, so a late
 * callback of a stream that ended touches nothing of its successor. A batch fails with the gRPC
 * status a unary {@code GetPeerRateLimits} call would have failed with: the status the peer refused
 * it with, the status the stream ended with (every batch still waiting on it), or {@code
 * DEADLINE_EXCEEDED} when no answer came within the timeout. A peer that does not serve streams
 * (Gubernator: {@code UNIMPLEMENTED}) makes the batches waiting on it, and every later one, fail
 * with {@link Unsupported} at once, for the caller to send them as unary calls instead.
 *
 * <p>Deadlines share one timer: every batch waits the same timeout, so the batches of a stream
 * fall due in the order they were sent. The timer is armed for the oldest batch waiting and, when
 * it fires, fails the batches that are due and re-arms for the next; a batch answered in time costs
 * no timer of its own (a timer per batch woke the timer thread once per batch at its due time,
 * answered or not).
 *
 * <p>A batch failed at its deadline keeps its place on the stream until the peer answers it (the
 * peer still reads and decides it): while any batch is past its deadline, at most {@link
 * #MAX_UNANSWERED} are unanswered on a stream, and a batch beyond that fails at once, unsent, with
 * {@code DEADLINE_EXCEEDED} caused by {@link Behind}. A peer that falls behind is so not sent ever
 * more batches that it would decide for nobody (they piled up in HTTP/2 flow control, with no bound
 * but the batcher's queue), and each answer it gives, even late, makes room for one more (only an
 * answer to a batch past its deadline: one repeated, or with the id of no batch, makes none). Costs
 * nothing per batch answered in time: the bound is checked against the batches waiting anyway, and
 * only the ids of batches past their deadline are kept.
 *
 * <p>A stream on which batches have gone unanswered for {@code stallAfter} (no batch answered within
 * its deadline since the oldest of them was sent) is stalled: its connection stays up while its
 * segments wait out TCP's backed-off retransmission timer, which after a lossy spell can be tens of
 * seconds, or its peer falls ever further behind. Answers that come only after their batches'
 * deadline do not keep it: every batch on it fails anyway, and dropping it discards the batches the
 * peer has not read yet, which it would otherwise decide for nobody. When a deadline finds it so (or
 * a batch, when the stream is behind and no deadline is left to find it), the batches still waiting
 * on it fail as if due, the call is cancelled, {@code onStall} runs (the client drops the
 * connection) and the next batch opens a fresh stream; a batch sent before {@code onStall} has run
 * fails with the stall instead of opening a stream on the connection being dropped. After {@link
 * #close()} every batch is refused and no stream opens.
 */
final class ForwardStream {

  /**
   * The most batches sent on one stream and not answered yet, including those already failed at
   * their deadline, beyond which a batch is not sent while any of them is past its deadline: as
   * many as the batcher has in flight.
   */
  static final int MAX_UNANSWERED = Batcher.MAX_IN_FLIGHT;

  private final Function<StreamObserver<ForwardCodec.Answers>, StreamObserver<ForwardCodec.Batch>> opener;
  private final Scheduler scheduler;
  private final Clock clock;
  private final Duration timeout;
  private final long stallAfterNanos;
  private final Runnable onStall;

  private final Object lock = new Object();
  private Stream stream;
  private boolean closed;
  private long nextId;
  private volatile boolean unsupported;

  /**
   * Creates the stream's sender.
   *
   * @param opener opens a {@code ForwardBatches} call whose answers go to the given observer
   * @param scheduler runs the deadline timer
   * @param clock reads when each batch was sent
   * @param timeout how long a batch waits for its answer
   * @param stallAfter how long batches may go unanswered before the stream is found stalled
   * @param onStall runs after a stalled stream was cancelled
   */
  ForwardStream(
      Function<StreamObserver<ForwardCodec.Answers>, StreamObserver<ForwardCodec.Batch>> opener,
      Scheduler scheduler,
      Clock clock,
      Duration timeout,
      Duration stallAfter,
      Runnable onStall) {
    this.opener = opener;
    this.scheduler = scheduler;
    this.clock = clock;
    this.timeout = timeout;
    this.stallAfterNanos = stallAfter.toNanos();
    this.onStall = onStall;
  }

  /** A batch that was not sent: the peer does not serve {@code ForwardBatches}. */
  static final class Unsupported extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Unsupported() {
      super("the peer does not serve ForwardBatches", null, false, false);
    }
  }

  /**
   * The cause of the {@code DEADLINE_EXCEEDED} that batches of a stalled stream fail with: the
   * connection was up, only the answers did not come.
   */
  static final class Stalled extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Stalled() {
      super("the forwarding stream stalled", null, false, false);
    }
  }

  /**
   * The cause of the {@code DEADLINE_EXCEEDED} that a batch fails with when it was not sent: the
   * stream already has {@link #MAX_UNANSWERED} batches unanswered, some past their deadline.
   */
  static final class Behind extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Behind() {
      super("the peer is too far behind on the forwarding stream", null, false, false);
    }
  }

  /**
   * The future of a batch's answers, which knows whether the stream refused the batch on the spot,
   * before it was sent.
   */
  private static final class Answer extends CompletableFuture<List<RateLimitResponse>> {
    private volatile boolean notSent;

    void refuse(RuntimeException why) {
      // Unsupported (a stream that ended as the peer not serving it) goes out as a unary call.
      notSent = !(why instanceof Unsupported);
      completeExceptionally(why);
    }
  }

  /**
   * Returns whether {@code answer}, as {@link #send} returned it, failed because the stream refused
   * its batch before sending it (closed, could not open, refused by the call, ended, or {@link
   * Behind}): such a batch is not counted nor timed as sent. Known as soon as {@code send} returns.
   * A batch refused as {@link Unsupported} is not counted here: it goes out as a unary call.
   */
  static boolean notSent(CompletableFuture<List<RateLimitResponse>> answer) {
    return answer instanceof Answer a && a.notSent;
  }

  /** Returns whether the peer was found not to serve streams. */
  boolean unsupported() {
    return unsupported;
  }

  /**
   * Sends {@code batch}; the future completes with one answer per request, in order. A batch the
   * stream is too far behind to take fails at once ({@link Behind}).
   */
  CompletableFuture<List<RateLimitResponse>> send(List<RateLimitRequest> batch) {
    Answer answer = new Answer();
    if (unsupported) {
      answer.completeExceptionally(new Unsupported());
      return answer;
    }
    Stalling stalling = trySend(batch, answer, true);
    if (stalling != null) {
      // Behind and nothing answered in time for the stall time, with no deadline left to find it:
      // dropped here as a deadline would have, and the batch goes out on a new stream.
      stalling.stream.dropConnection(stalling.stall);
      trySend(batch, answer, false);
      stalling.failDropped();
    }
    return answer;
  }

  /**
   * Sends {@code batch} on the current stream, opened if need be; or, when that stream is {@link
   * Stream#behind() behind} and has answered nothing in time for the stall time and {@code mayDrop},
   * ends it as stalled and returns it for the caller to drop (the batch is not sent then).
   */
  private Stalling trySend(
      List<RateLimitRequest> batch, Answer answer, boolean mayDrop) {
    Stream target;
    boolean arm;
    synchronized (lock) {
      if (closed) {
        answer.refuse(closedError());
        return null;
      }
      target = stream;
      if (target == null) {
        // Current before it is opened: a call that fails as it starts ends it at once (end()).
        target = new Stream();
        stream = target;
        try {
          target.requests = opener.apply(target);
        } catch (RuntimeException e) {
          if (stream == target) {
            stream = null;
          }
          answer.refuse(refused("could not open the forwarding stream", e));
          return null;
        }
      }
      if (target.endedWith != null) {
        answer.refuse(target.endedWith);
        return null;
      }
      // Read under the lock, so that the batches waiting fall due in the order they were sent.
      long now = clock.monotonicNanos();
      if (target.behind()) {
        if (target.unansweredSince == ANSWERED) {
          // Answered in time since it last sent: the stall clock starts with this refusal.
          target.unansweredSince = now;
        } else if (mayDrop && now - target.unansweredSince >= stallAfterNanos) {
          RuntimeException stall = stalled(Duration.ofNanos(now - target.unansweredSince));
          return new Stalling(target, stall, target.endLocked(stall));
        }
        int overdue = target.overdue.size();
        answer.refuse(behind(target.pending.size() + overdue, overdue));
        return null;
      }
      long id = nextId++;
      long due = now + timeout.toNanos();
      // Waiting before it is sent: a peer on the same thread may answer within onNext.
      long unansweredBefore = target.unansweredSince;
      if (unansweredBefore == ANSWERED) {
        target.unansweredSince = now;
      }
      target.pending.put(id, new Waiting(answer, batch.size(), due));
      try {
        target.requests.onNext(new ForwardCodec.Batch(id, batch));
      } catch (RuntimeException e) {
        // The call no longer takes messages (cancelled or closed): the next batch opens another.
        target.pending.remove(id);
        target.unansweredSince = unansweredBefore;
        if (stream == target) {
          stream = null;
        }
        answer.refuse(refused("the forwarding stream refused the batch", e));
        return null;
      }
      arm = !target.timerArmed;
      target.timerArmed = true;
    }
    if (arm) {
      target.armTimer(timeout);
    }
    return null;
  }

  /**
   * Half-closes the stream (batches still waiting get their answers, or fail as the stream's end)
   * and refuses every batch from now on ({@code CANCELLED}): no stream opens after close, so none is
   * left open when the client's channel shuts down.
   */
  void close() {
    Stream ending;
    synchronized (lock) {
      closed = true;
      ending = stream;
      stream = null;
      if (ending != null && ending.endedWith != null) {
        // Dropped as stalled and left current until its connection is dropped: the drop cancels
        // its call, which must not be half-closed (gRPC refuses a half-close after a cancel).
        ending = null;
      }
    }
    if (ending != null) {
      ending.halfClose();
    }
  }

  private static RuntimeException refused(String what, RuntimeException cause) {
    return Status.UNAVAILABLE
        .withDescription(what + ": " + cause.getMessage())
        .withCause(cause)
        .asRuntimeException();
  }

  private static RuntimeException closedError() {
    return Status.CANCELLED
        .withDescription(
            "the forwarding stream was closed (the peer left the ring, moved, or this node is"
                + " shutting down): the batch was not sent")
        .asRuntimeException();
  }

  private RuntimeException behind(int unanswered, int overdue) {
    return Status.DEADLINE_EXCEEDED
        .withDescription(
            "the peer is "
                + unanswered
                + " batches behind ("
                + unanswered
                + " batches sent on the forwarding stream are unanswered, "
                + overdue
                + " of them past their deadline of "
                + timeout
                + "), so this batch was not sent: the peer is overloaded or the network to it is"
                + " slow; batches go out again as it answers, and the stream is dropped when none is"
                + " answered in time for "
                + Duration.ofNanos(stallAfterNanos))
        .withCause(new Behind())
        .asRuntimeException();
  }

  private static RuntimeException noAnswer(String why) {
    return Status.DEADLINE_EXCEEDED.withDescription(why).asRuntimeException();
  }

  private static RuntimeException stalled(Duration unansweredFor) {
    return Status.DEADLINE_EXCEEDED
        .withDescription(
            "no answer on the forwarding stream for "
                + unansweredFor
                + ": the stream and its connection are dropped")
        .withCause(new Stalled())
        .asRuntimeException();
  }

  /**
   * {@link Stream#unansweredSince} when the last answer came in time and no batch was sent (nor
   * refused as behind) since.
   */
  private static final long ANSWERED = Long.MIN_VALUE;

  /** A stream ended as stalled by a send, the reason, and the batches that fail with it. */
  private record Stalling(Stream stream, RuntimeException stall, List<Waiting> dropped) {
    void failDropped() {
      dropped.forEach(w -> w.answer.completeExceptionally(stall));
    }
  }

  /** A batch waiting for its answer until {@code due} ({@link Clock#monotonicNanos()}). */
  private record Waiting(CompletableFuture<List<RateLimitResponse>> answer, int size, long due) {}

  /** One opened {@code ForwardBatches} call and the batches waiting on it. */
  private final class Stream implements StreamObserver<ForwardCodec.Answers> {
    /** The batches waiting, in the order they were sent, which is the order they fall due. */
    private final Map<Long, Waiting> pending = new LinkedHashMap<>();
    private StreamObserver<ForwardCodec.Batch> requests;
    private RuntimeException endedWith;
    private boolean timerArmed;
    /**
     * The ids of the batches failed at their deadline whose answers have not come: the peer still
     * reads and decides them, so they count toward {@link #MAX_UNANSWERED} until answered or the
     * stream ends. Ids, not a count: an answer the peer repeats, or with an id of no batch, frees no
     * room.
     */
    private final Set<Long> overdue = new HashSet<>();
    /**
     * When the oldest batch sent since the last answer in time was sent (or, when the stream was
     * behind, the first batch refused since), or {@link #ANSWERED}: an answer to a batch already
     * failed at its deadline shows the connection carrying bytes, not the stream serving, and does
     * not reset it.
     */
    private long unansweredSince = ANSWERED;
    /**
     * Held while the call is half-closed or cancelled, never while taking {@code lock} (a cancel
     * may end the call on this thread, which takes {@code lock}).
     */
    private final Object callEnd = new Object();
    /** Whether the call was cancelled as stalled (guarded by {@code callEnd}). */
    private boolean cancelled;

    @Override
    public void onNext(ForwardCodec.Answers answers) {
      Waiting waiting;
      synchronized (lock) {
        waiting = pending.remove(answers.id());
        if (waiting != null) {
          unansweredSince = ANSWERED;
        } else {
          overdue.remove(answers.id()); // late: the batch failed at its deadline, now decided
        }
      }
      if (waiting == null) {
        return;
      }
      if (answers.errorCode() != Status.Code.OK.value()) {
        waiting.answer.completeExceptionally(
            Status.fromCodeValue(answers.errorCode())
                .withDescription(answers.error())
                .asRuntimeException());
      } else if (answers.answers().size() != waiting.size) {
        waiting.answer.completeExceptionally(
            Status.INTERNAL
                .withDescription(
                    "expected "
                        + waiting.size
                        + " answers on the forwarding stream, got "
                        + answers.answers().size())
                .asRuntimeException());
      } else {
        waiting.answer.complete(answers.answers());
      }
    }

    @Override
    public void onError(Throwable t) {
      Status status = Status.fromThrowable(t);
      if (status.getCode() == Status.Code.UNIMPLEMENTED) {
        unsupported = true;
        end(new Unsupported());
      } else {
        end(status.asRuntimeException());
      }
    }

    @Override
    public void onCompleted() {
      end(Status.UNAVAILABLE.withDescription("the forwarding stream ended").asRuntimeException());
    }

    private void end(RuntimeException reason) {
      List<Waiting> failed;
      synchronized (lock) {
        if (endedWith != null) {
          // Dropped as stalled (the cancel ends the call): the drop clears its place once done.
          return;
        }
        if (stream == this) {
          stream = null;
        }
        endedWith = reason;
        failed = new ArrayList<>(pending.values());
        pending.clear();
      }
      failed.forEach(w -> w.answer.completeExceptionally(reason));
    }

    /**
     * Caller holds the lock. Whether this stream is too far behind to take a batch: {@link
     * #MAX_UNANSWERED} batches unanswered, at least one past its deadline (batches within their
     * deadline alone are bounded by the batcher, and a flush on close may send more).
     */
    private boolean behind() {
      return !overdue.isEmpty() && pending.size() + overdue.size() >= MAX_UNANSWERED;
    }

    /**
     * Caller holds the lock. Ends this stream as stalled with {@code stall}, leaving it current so
     * that no batch opens a stream before its connection is dropped; returns the batches waiting.
     */
    private List<Waiting> endLocked(RuntimeException stall) {
      endedWith = stall;
      List<Waiting> dropped = new ArrayList<>(pending.values());
      pending.clear();
      return dropped;
    }

    /**
     * Cancels this stalled stream's call and drops its connection ({@code onStall}), then lets the
     * next batch open a new stream.
     */
    private void dropConnection(RuntimeException stall) {
      try {
        cancel(stall);
        onStall.run();
      } finally {
        synchronized (lock) {
          if (stream == this) {
            stream = null;
          }
        }
      }
    }

    /**
     * Half-closes this stream's call unless it was cancelled. The call's end is one at a time
     * ({@code callEnd}): a close that took the stream just before a deadline found it stalled does
     * not half-close it while the drop cancels it on another thread.
     */
    private void halfClose() {
      synchronized (callEnd) {
        if (!cancelled) {
          requests.onCompleted();
        }
      }
    }

    /** Cancels this stream's call with {@code reason}; it is never half-closed after. */
    private void cancel(RuntimeException reason) {
      synchronized (callEnd) {
        cancelled = true;
        requests.onError(reason);
      }
    }

    private void armTimer(Duration delay) {
      scheduler.schedule(this::expireDue, delay);
    }

    /**
     * Fails the batches whose deadline has passed and re-arms the timer for the oldest one left; or,
     * when the stream is found stalled, fails every batch waiting and drops the stream.
     */
    private void expireDue() {
      List<Waiting> expired = new ArrayList<>();
      List<Long> expiredIds = new ArrayList<>();
      List<Waiting> dropped = List.of();
      long next;
      RuntimeException stall = null;
      synchronized (lock) {
        long now = clock.monotonicNanos();
        Iterator<Map.Entry<Long, Waiting>> oldestFirst = pending.entrySet().iterator();
        next = -1;
        while (oldestFirst.hasNext()) {
          Map.Entry<Long, Waiting> e = oldestFirst.next();
          Waiting w = e.getValue();
          if (w.due - now > 0) {
            next = w.due - now;
            break;
          }
          expired.add(w);
          expiredIds.add(e.getKey());
          oldestFirst.remove();
        }
        if (!expired.isEmpty()
            && unansweredSince != ANSWERED
            && now - unansweredSince >= stallAfterNanos) {
          // Left current until its connection is dropped: a batch sent meanwhile fails with it
          // instead of opening a stream on the connection about to be dropped.
          stall = stalled(Duration.ofNanos(now - unansweredSince));
          dropped = endLocked(stall);
          next = -1;
        } else {
          overdue.addAll(expiredIds);
        }
        timerArmed = next >= 0;
      }
      if (next >= 0) {
        armTimer(Duration.ofNanos(next));
      }
      if (stall != null) {
        // Dropped first, so that a batch sent as these fail goes out on a new connection.
        dropConnection(stall);
      }
      RuntimeException due = noAnswer("no answer on the forwarding stream within " + timeout);
      for (Waiting w : expired) {
        w.answer.completeExceptionally(stall == null ? due : stall);
      }
      for (Waiting w : dropped) {
        w.answer.completeExceptionally(stall);
      }
    }
  }
}
