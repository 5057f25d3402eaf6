package dev.weir.core.cluster.peer;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.time.Scheduler;
import dev.weir.proto.gubernator.ForwardAnswers;
import dev.weir.proto.gubernator.ForwardBatch;
import dev.weir.proto.gubernator.RateLimitResp;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
 */
final class ForwardStream {

  private final Function<StreamObserver<ForwardAnswers>, StreamObserver<ForwardBatch>> opener;
  private final Scheduler scheduler;
  private final Duration timeout;

  private final Object lock = new Object();
  private Stream stream;
  private long nextId;
  private volatile boolean unsupported;

  /**
   * Creates the stream's sender.
   *
   * @param opener opens a {@code ForwardBatches} call whose answers go to the given observer
   * @param scheduler times each batch's deadline
   * @param timeout how long a batch waits for its answer
   */
  ForwardStream(
      Function<StreamObserver<ForwardAnswers>, StreamObserver<ForwardBatch>> opener,
      Scheduler scheduler,
      Duration timeout) {
    this.opener = opener;
    this.scheduler = scheduler;
    this.timeout = timeout;
  }

  /** A batch that was not sent: the peer does not serve {@code ForwardBatches}. */
  static final class Unsupported extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Unsupported() {
      super("the peer does not serve ForwardBatches", null, false, false);
    }
  }

  /** Returns whether the peer was found not to serve streams. */
  boolean unsupported() {
    return unsupported;
  }

  /** Sends {@code batch}; the future completes with one answer per request, in order. */
  CompletableFuture<List<RateLimitResp>> send(List<RateLimitRequest> batch) {
    CompletableFuture<List<RateLimitResp>> answer = new CompletableFuture<>();
    if (unsupported) {
      answer.completeExceptionally(new Unsupported());
      return answer;
    }
    ForwardBatch.Builder message = ForwardBatch.newBuilder();
    for (RateLimitRequest r : batch) {
      message.addRequests(PeerProtos.toProto(r));
    }
    Stream target;
    long id;
    synchronized (lock) {
      target = stream;
      if (target == null) {
        target = new Stream();
        stream = target;
        target.requests = opener.apply(target);
      }
      if (target.endedWith != null) {
        answer.completeExceptionally(target.endedWith);
        return answer;
      }
      id = nextId++;
      target.pending.put(id, new Waiting(answer, batch.size()));
      target.requests.onNext(message.setId(id).build());
    }
    Stream sentOn = target;
    Scheduler.Task timer = scheduler.schedule(() -> sentOn.expire(id), timeout);
    answer.whenComplete((a, e) -> timer.cancel());
    return answer;
  }

  /** Ends the stream: batches still waiting fail as the stream's end. */
  void close() {
    Stream ending;
    synchronized (lock) {
      ending = stream;
      stream = null;
    }
    if (ending != null) {
      ending.requests.onCompleted();
    }
  }

  private record Waiting(CompletableFuture<List<RateLimitResp>> answer, int size) {}

  /** One opened {@code ForwardBatches} call and the batches waiting on it. */
  private final class Stream implements StreamObserver<ForwardAnswers> {
    private final Map<Long, Waiting> pending = new HashMap<>();
    private StreamObserver<ForwardBatch> requests;
    private RuntimeException endedWith;

    @Override
    public void onNext(ForwardAnswers answers) {
      Waiting waiting;
      synchronized (lock) {
        waiting = pending.remove(answers.getId());
      }
      if (waiting == null) {
        return;
      }
      if (answers.getErrorCode() != Status.Code.OK.value()) {
        waiting.answer.completeExceptionally(
            Status.fromCodeValue(answers.getErrorCode())
                .withDescription(answers.getError())
                .asRuntimeException());
      } else if (answers.getRateLimitsCount() != waiting.size) {
        waiting.answer.completeExceptionally(
            Status.INTERNAL
                .withDescription(
                    "expected "
                        + waiting.size
                        + " answers on the forwarding stream, got "
                        + answers.getRateLimitsCount())
                .asRuntimeException());
      } else {
        waiting.answer.complete(answers.getRateLimitsList());
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
        if (stream == this) {
          stream = null;
        }
        endedWith = reason;
        failed = new ArrayList<>(pending.values());
        pending.clear();
      }
      failed.forEach(w -> w.answer.completeExceptionally(reason));
    }

    private void expire(long id) {
      Waiting waiting;
      synchronized (lock) {
        waiting = pending.remove(id);
      }
      if (waiting != null) {
        waiting.answer.completeExceptionally(
            Status.DEADLINE_EXCEEDED
                .withDescription("no answer on the forwarding stream within " + timeout)
                .asRuntimeException());
      }
    }
  }
}
