package dev.weir.core.cluster.peer;

import dev.weir.core.concurrent.Completions;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.time.Clock;
import dev.weir.core.toplimited.TopLimitedOffException;
import dev.weir.core.toplimited.TopLimitedView;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.AnnounceResp;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.PushQuotaSharesReq;
import dev.weir.proto.gubernator.PushQuotaSharesResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.ReportQuotaUsageReq;
import dev.weir.proto.gubernator.ReportQuotaUsageResp;
import dev.weir.proto.gubernator.TopLimitedReq;
import dev.weir.proto.gubernator.TopLimitedResp;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.TransferBucketsResp;
import dev.weir.proto.gubernator.UpdatePeerGlobalsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobalsResp;
import io.grpc.BindableService;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Deadline;
import io.grpc.Grpc;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.LoggerFactory;

/**
 * The server side of {@code pb.gubernator.PeersV1}, delegating to a {@link PeerHandler} what passes
 * the {@link PeerInputValidator}. A call with more than {@value RateLimitService#MAX_BATCH_SIZE}
 * items is refused whole ({@code OUT_OF_RANGE}), and so is a malformed membership notice or sender
 * address, or a copy request the handler refuses ({@link RefusedPeerCall}: {@code
 * INVALID_ARGUMENT}); an invalid forwarded item or quota usage is answered with its
 * error, an invalid GLOBAL update, handed-over bucket or pushed quota share is dropped, the others
 * applied. Every refusal counts as {@link RefusalReason#PEER_INVALID_INPUT} (or {@link
 * RefusalReason#TOO_MANY_ITEMS}) and is logged at most once per 10 s per method. An empty {@code
 * GetPeerRateLimits} is a peer's probe: answered only while the handler is {@linkplain
 * PeerHandler#serving() serving}. Forwarded items are answered when the handler's {@link
 * PeerHandler#answerForwarded} completes (later, when it hands some on to their owner), and quota
 * usage when its {@link PeerHandler#answerQuotaUsage} does.
 */
public final class PeersService implements PeersV1Grpc.AsyncService, BindableService {

  /** The message of the {@code UNAVAILABLE} answer to a probe of a node that is not serving. */
  public static final String NOT_SERVING =
      "this node is not serving as a cluster member (joining or leaving)";

  /** The message of the {@code OUT_OF_RANGE} error for a peer call with too many items. */
  public static final String TOO_LARGE =
      "'PeerRequest.rate_limits' list too large; max size is '"
          + RateLimitService.MAX_BATCH_SIZE
          + "'";

  /** The remote address of the {@code Announce} call being served (null when none is known). */
  private static final Context.Key<SocketAddress> CALLER = Context.key("weir-peer-caller");

  /** How long a relayed call waits for its target when the caller set no deadline. */
  static final Duration RELAY_WAIT = Duration.ofMillis(500);

  private final PeerHandler handler;
  private final PeerInputValidator validator;
  private final Clock clock;
  private final WeirMetrics metrics;
  private final RateLimitedLogger warnings;

  /**
   * Creates the service over {@code handler}, checking what peers send with {@code validator} at
   * {@code clock}'s time and counting refusals in {@code metrics}.
   */
  public PeersService(
      PeerHandler handler, PeerInputValidator validator, Clock clock, WeirMetrics metrics) {
    this.handler = handler;
    this.validator = validator;
    this.clock = clock;
    this.metrics = metrics;
    this.warnings =
        new RateLimitedLogger(
            LoggerFactory.getLogger(PeersService.class), clock, Duration.ofSeconds(10));
  }

  /**
   * Creates the service over {@code handler} with the default key lengths, no own address to
   * protect and no metrics: for tests and in-process peers.
   */
  public PeersService(PeerHandler handler, Clock clock) {
    this(handler, new PeerInputValidator(InputLimits.DEFAULTS, ""), clock, WeirMetrics.NOOP);
  }

  @Override
  public void getPeerRateLimits(
      GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> observer) {
    if (!request.getWeirRelayTo().isEmpty()) {
      relay(request, observer);
      return;
    }
    if (RateLimitService.tooManyItems(request.getRequestsCount())) {
      tooMany("GetPeerRateLimits", request.getRequestsCount(), observer, TOO_LARGE);
      return;
    }
    if (request.getRequestsCount() == 0 && !handler.serving()) {
      observer.onError(Status.UNAVAILABLE.withDescription(NOT_SERVING).asRuntimeException());
      return;
    }
    answer("GetPeerRateLimits", fromProtos(request.getRequestsList()))
        .whenComplete(
            (answers, error) -> {
              if (error != null) {
                observer.onError(
                    Status.INTERNAL.withDescription(error.toString()).asRuntimeException());
                return;
              }
              GetPeerRateLimitsResp.Builder resp = GetPeerRateLimitsResp.newBuilder();
              answers.forEach(a -> resp.addRateLimits(PeerProtos.toProto(a)));
              observer.onNext(resp.build());
              observer.onCompleted();
            });
  }

  /**
   * Binds the generated methods, with {@code ForwardBatches} on core requests and answers ({@link
   * PeerMethods#FORWARD_BATCHES}) served by {@link #forwardStream}.
   */
  @Override
  public ServerServiceDefinition bindService() {
    ServerServiceDefinition.Builder out = ServerServiceDefinition.builder(PeerMethods.SERVICE);
    for (ServerMethodDefinition<?, ?> method : PeersV1Grpc.bindService(this).getMethods()) {
      String name = method.getMethodDescriptor().getFullMethodName();
      if (name.equals(PeersV1Grpc.getAnnounceMethod().getFullMethodName())) {
        out.addMethod(withCaller(method));
      } else if (!name.equals(PeerMethods.FORWARD_BATCHES.getFullMethodName())) {
        out.addMethod(method);
      }
    }
    return out.addMethod(
            PeerMethods.FORWARD_BATCHES, ServerCalls.asyncBidiStreamingCall(this::forwardStream))
        .build();
  }

  /** Returns {@code method} with the caller's remote address in {@link #CALLER} while it runs. */
  private static <Q, A> ServerMethodDefinition<Q, A> withCaller(ServerMethodDefinition<Q, A> method) {
    ServerCallHandler<Q, A> handler = method.getServerCallHandler();
    return ServerMethodDefinition.create(
        method.getMethodDescriptor(),
        (call, headers) ->
            Contexts.interceptCall(
                Context.current()
                    .withValue(CALLER, call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR)),
                call,
                headers,
                handler));
  }

  /**
   * Serves a stream of forwarded batches: each is checked and answered as a {@code
   * GetPeerRateLimits} call with its items would be, on the reverse stream with the batch's id; a
   * batch refused whole carries the status code and message the call would have failed with. When
   * the sender half-closes, the reverse stream ends once every batch received has been answered
   * (answers of items handed on to their new owner come later). The next batch is read only while
   * the reverse stream is ready ({@link ReadWhileReady}): a sender that stops reading the answers
   * already written is not read from either. Answers not written yet (of items handed on) do not
   * hold the reading back; what bounds the answers held for one sender is its own cap on batches
   * unanswered ({@link ForwardStream#MAX_UNANSWERED}).
   */
  StreamObserver<ForwardCodec.Batch> forwardStream(StreamObserver<ForwardCodec.Answers> answers) {
    ReadWhileReady reading = ReadWhileReady.over(answers);
    return new StreamObserver<>() {
      // Guarded by answers: batches received and not answered yet, and whether the sender is done.
      private int pending;
      private boolean halfClosed;
      private boolean ended;

      @Override
      public void onNext(ForwardCodec.Batch batch) {
        answerBatch(batch);
        reading.received();
      }

      private void answerBatch(ForwardCodec.Batch batch) {
        long id = batch.id();
        int count = batch.requests().size();
        synchronized (answers) {
          pending++;
        }
        if (RateLimitService.tooManyItems(count)) {
          refusedTooMany("ForwardBatches", count, TOO_LARGE);
          send(ForwardCodec.Answers.refused(id, Status.Code.OUT_OF_RANGE.value(), TOO_LARGE));
          return;
        }
        answer("ForwardBatches", batch.requests())
            .whenComplete(
                (rateLimits, error) ->
                    send(
                        error == null
                            ? ForwardCodec.Answers.of(id, rateLimits)
                            : ForwardCodec.Answers.refused(
                                id, Status.Code.INTERNAL.value(), error.toString())));
      }

      // Answers complete on other threads when items are handed on; one onNext at a time.
      private void send(ForwardCodec.Answers out) {
        synchronized (answers) {
          pending--;
          if (!ended) {
            answers.onNext(out);
          }
          endWhenDone();
        }
      }

      @Override
      public void onError(Throwable t) {
        synchronized (answers) {
          ended = true;
        }
      }

      @Override
      public void onCompleted() {
        synchronized (answers) {
          halfClosed = true;
          endWhenDone();
        }
      }

      private void endWhenDone() {
        if (halfClosed && pending == 0 && !ended) {
          ended = true;
          answers.onCompleted();
        }
      }
    };
  }

  /**
   * Checks {@code requests} of a {@code method} call and answers each, in order: its refusal, else
   * the handler's answer (completed later when the handler hands items on to their new owner).
   */
  private CompletableFuture<List<RateLimitResponse>> answer(
      String method, List<RateLimitRequest> requests) {
    try {
      return checkAndAnswer(method, requests);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private CompletableFuture<List<RateLimitResponse>> checkAndAnswer(
      String method, List<RateLimitRequest> requests) {
    long now = clock.wallMillis();
    int count = requests.size();
    List<RateLimitRequest> items = new ArrayList<>(count);
    String[] errors = null;
    for (int i = 0; i < count; i++) {
      RateLimitRequest item = requests.get(i);
      Optional<String> error = validator.checkRequest(item, now);
      if (error.isPresent()) {
        errors = errors == null ? new String[count] : errors;
        errors[i] = error.get();
        refusedItem(method, i, error.get());
      } else {
        items.add(item);
      }
    }
    CompletableFuture<List<RateLimitResponse>> answered =
        items.isEmpty()
            ? CompletableFuture.completedFuture(List.of())
            : handler.answerForwarded(items);
    if (errors == null) {
      return answered;
    }
    String[] refused = errors;
    return answered.thenApply(
        answers -> {
          List<RateLimitResponse> out = new ArrayList<>(count);
          int next = 0;
          for (int i = 0; i < count; i++) {
            out.add(refused[i] != null ? RateLimitResponse.error(refused[i]) : answers.get(next++));
          }
          return out;
        });
  }

  private static List<RateLimitRequest> fromProtos(List<RateLimitReq> requests) {
    List<RateLimitRequest> out = new ArrayList<>(requests.size());
    requests.forEach(r -> out.add(PeerProtos.fromProto(r)));
    return out;
  }

  /**
   * Relays a peer's call to its {@code weir_relay_to} target through the handler; a target this
   * node does not reach is refused with {@code FAILED_PRECONDITION} (not {@code UNAVAILABLE}, which
   * would tell the caller that this node does not answer).
   */
  private void relay(GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> observer) {
    if (RateLimitService.tooManyItems(request.getRequestsCount())) {
      tooMany("GetPeerRateLimits", request.getRequestsCount(), observer, TOO_LARGE);
      return;
    }
    Optional<Duration> within =
        relayable("GetPeerRateLimits", request.getWeirRelayTo(), observer);
    if (within.isPresent()) {
      relayed(() -> handler.relay(request, within.get()), resp -> resp, observer);
    }
  }

  /**
   * Returns how long a call relayed to {@code target} may wait for it (4/5 of what is left of the
   * caller's deadline), or empty after refusing the call on {@code observer} when {@code target} is
   * not a valid address or this node is not serving (with the trailer {@link UnsentRelay#TRAILER}).
   */
  private Optional<Duration> relayable(
      String method, String target, StreamObserver<?> observer) {
    Optional<String> error = validator.checkAddress("weir_relay_to", target);
    if (error.isPresent()) {
      invalid(method, error.get(), observer);
      return Optional.empty();
    }
    if (!handler.serving()) {
      observer.onError(
          Status.FAILED_PRECONDITION
              .withDescription(NOT_SERVING)
              .asRuntimeException(UnsentRelay.trailers()));
      return Optional.empty();
    }
    Deadline deadline = Context.current().getDeadline();
    return Optional.of(
        deadline == null
            ? RELAY_WAIT
            : Duration.ofNanos(deadline.timeRemaining(TimeUnit.NANOSECONDS) * 4 / 5));
  }

  /**
   * Answers {@code observer} with what {@code relay} completes with, as {@code answer} makes it, or
   * with {@code FAILED_PRECONDITION} carrying the reason it failed, and the trailers of {@link
   * UnsentRelay#answerTrailers} when it failed with an {@link UnsentRelay}.
   */
  private <T, R> void relayed(
      Supplier<CompletableFuture<T>> relay,
      Function<T, R> answer,
      StreamObserver<R> observer) {
    CompletableFuture<T> relayed;
    try {
      relayed = relay.get();
    } catch (RuntimeException e) {
      relayed = CompletableFuture.failedFuture(e);
    }
    relayed.whenComplete(
        (resp, failure) -> {
          if (failure == null) {
            observer.onNext(answer.apply(resp));
            observer.onCompleted();
          } else {
            Throwable cause = Completions.cause(failure);
            observer.onError(
                Status.FAILED_PRECONDITION
                    .withDescription(String.valueOf(cause.getMessage()))
                    .asRuntimeException(
                        cause instanceof UnsentRelay unsent ? unsent.answerTrailers() : null));
          }
        });
  }

  @Override
  public void updatePeerGlobals(
      UpdatePeerGlobalsReq request, StreamObserver<UpdatePeerGlobalsResp> observer) {
    if (RateLimitService.tooManyItems(request.getGlobalsCount())) {
      tooMany("UpdatePeerGlobals", request.getGlobalsCount(), observer, tooLarge("globals"));
      return;
    }
    try {
      handler.applyGlobals(
          valid("UpdatePeerGlobals", request.getGlobalsList(), validator::checkGlobal));
      observer.onNext(UpdatePeerGlobalsResp.getDefaultInstance());
      observer.onCompleted();
    } catch (RuntimeException e) {
      observer.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  @Override
  public void transferBuckets(
      TransferBucketsReq request, StreamObserver<TransferBucketsResp> observer) {
    if (RateLimitService.tooManyItems(request.getBucketsCount())) {
      tooMany("TransferBuckets", request.getBucketsCount(), observer, tooLarge("buckets"));
      return;
    }
    Optional<String> from = validator.checkAddress("from", request.getFrom());
    if (from.isPresent()) {
      invalid("TransferBuckets", from.get(), observer);
      return;
    }
    if (!request.getWeirRelayTo().isEmpty()) {
      Optional<Duration> within = relayable("TransferBuckets", request.getWeirRelayTo(), observer);
      if (within.isPresent()) {
        relayed(
            () -> handler.relayTransfer(request, within.get()),
            accepted -> TransferBucketsResp.newBuilder().setAccepted(accepted).build(),
            observer);
      }
      return;
    }
    try {
      List<BucketSnapshot> buckets =
          valid("TransferBuckets", request.getBucketsList(), validator::checkSnapshot);
      int accepted = buckets.isEmpty() ? 0 : handler.acceptBuckets(buckets, request.getFrom());
      observer.onNext(TransferBucketsResp.newBuilder().setAccepted(accepted).build());
      observer.onCompleted();
    } catch (RuntimeException e) {
      observer.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  @Override
  public void announce(AnnounceReq request, StreamObserver<AnnounceResp> observer) {
    Optional<String> error = validator.checkAnnounce(request);
    if (error.isPresent()) {
      invalid("Announce", error.get(), observer);
      return;
    }
    CompletableFuture<Void> handled;
    try {
      handled =
          request.getPrepareReturn()
              ? handler.prepareReturn(request.getAddress(), CALLER.get())
              : handler.announce(request.getAddress(), request.getLeaving());
    } catch (RuntimeException e) {
      handled = CompletableFuture.failedFuture(e);
    }
    handled.whenComplete(
        (ok, failure) -> {
          Throwable cause = Completions.cause(failure);
          if (failure == null) {
            observer.onNext(AnnounceResp.getDefaultInstance());
            observer.onCompleted();
          } else if (cause instanceof RefusedPeerCall refused) {
            invalid("Announce", refused.getMessage(), observer);
          } else {
            observer.onError(
                Status.INTERNAL.withDescription(failure.toString()).asRuntimeException());
          }
        });
  }

  @Override
  public void reportQuotaUsage(
      ReportQuotaUsageReq request, StreamObserver<ReportQuotaUsageResp> observer) {
    if (RateLimitService.tooManyItems(request.getUsagesCount())) {
      tooMany("ReportQuotaUsage", request.getUsagesCount(), observer, tooLarge("usages"));
      return;
    }
    try {
      long now = clock.wallMillis();
      int n = request.getUsagesCount();
      List<QuotaUsage> usages = new ArrayList<>(n);
      String[] errors = null;
      for (int i = 0; i < n; i++) {
        Optional<String> error = validator.checkQuotaUsage(request.getUsages(i), now);
        if (error.isPresent()) {
          errors = errors == null ? new String[n] : errors;
          errors[i] = error.get();
          refusedItem("ReportQuotaUsage", i, error.get());
        } else {
          usages.add(QuotaProtos.fromProto(request.getUsages(i)));
        }
      }
      CompletableFuture<List<QuotaShare>> answered =
          usages.isEmpty()
              ? CompletableFuture.completedFuture(List.of())
              : handler.answerQuotaUsage(usages);
      String[] refused = errors;
      answered.whenComplete(
          (shares, failure) -> {
            if (failure != null) {
              observer.onError(
                  Status.INTERNAL.withDescription(failure.toString()).asRuntimeException());
              return;
            }
            ReportQuotaUsageResp.Builder resp = ReportQuotaUsageResp.newBuilder();
            int next = 0;
            for (int i = 0; i < n; i++) {
              QuotaShare share =
                  refused != null && refused[i] != null
                      ? QuotaShare.error(refused[i])
                      : shares.get(next++);
              resp.addShares(QuotaProtos.toProto(share));
            }
            observer.onNext(resp.build());
            observer.onCompleted();
          });
    } catch (RuntimeException e) {
      observer.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  @Override
  public void pushQuotaShares(
      PushQuotaSharesReq request, StreamObserver<PushQuotaSharesResp> observer) {
    if (RateLimitService.tooManyItems(request.getPushesCount())) {
      tooMany("PushQuotaShares", request.getPushesCount(), observer, tooLarge("pushes"));
      return;
    }
    try {
      List<QuotaPush> pushes =
          valid("PushQuotaShares", request.getPushesList(), validator::checkQuotaPush).stream()
              .map(QuotaProtos::fromProto)
              .toList();
      int delivered = pushes.isEmpty() ? 0 : handler.deliverQuotaShares(pushes);
      observer.onNext(PushQuotaSharesResp.newBuilder().setDelivered(delivered).build());
      observer.onCompleted();
    } catch (RuntimeException e) {
      observer.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  /**
   * Answers with this node's top-limited keys: at most {@code limit} of them (every one the
   * handler has when {@code limit} is not positive), and only the first that fit in {@link
   * TopLimitedProtos#MAX_ANSWER_BYTES}, so that long names and keys cannot make the answer larger
   * than a peer message may be. A node that does not count them answers {@code
   * FAILED_PRECONDITION} saying so, so that the asking node lists it among the members whose keys
   * it lacks.
   */
  @Override
  public void topLimited(TopLimitedReq request, StreamObserver<TopLimitedResp> observer) {
    try {
      TopLimitedView view = handler.topLimited();
      if (request.getLimit() > 0) {
        view = view.first(request.getLimit());
      }
      observer.onNext(TopLimitedProtos.toProto(view, TopLimitedProtos.MAX_ANSWER_BYTES));
      observer.onCompleted();
    } catch (TopLimitedOffException e) {
      observer.onError(
          Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException());
    } catch (RuntimeException e) {
      observer.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  /** Returns the items of {@code all} that {@code check} passes, counting and logging the rest. */
  private <T> List<T> valid(
      String method, List<T> all, BiFunction<T, Long, Optional<String>> check) {
    long now = clock.wallMillis();
    List<T> valid = null;
    for (int i = 0; i < all.size(); i++) {
      Optional<String> error = check.apply(all.get(i), now);
      if (error.isPresent()) {
        if (valid == null) {
          valid = new ArrayList<>(all.subList(0, i));
        }
        refusedItem(method, i, error.get());
      } else if (valid != null) {
        valid.add(all.get(i));
      }
    }
    return valid == null ? all : valid;
  }

  private void refusedItem(String method, int index, String error) {
    metrics.refused(RefusalReason.PEER_INVALID_INPUT);
    warnings.warn(
        "invalid " + method, "refused item {} of a peer's {} call: {}", index, method, error);
  }

  private void invalid(String method, String error, StreamObserver<?> observer) {
    metrics.refused(RefusalReason.PEER_INVALID_INPUT);
    warnings.warn("invalid " + method, "refused a peer's {} call: {}", method, error);
    observer.onError(Status.INVALID_ARGUMENT.withDescription(error).asRuntimeException());
  }

  private void tooMany(String method, int count, StreamObserver<?> observer, String message) {
    refusedTooMany(method, count, message);
    observer.onError(Status.OUT_OF_RANGE.withDescription(message).asRuntimeException());
  }

  private void refusedTooMany(String method, int count, String message) {
    metrics.refused(RefusalReason.TOO_MANY_ITEMS);
    warnings.warn(
        "too many " + method, "refused a peer's {} call of {} items: {}", method, count, message);
  }

  private static String tooLarge(String field) {
    return "'" + field + "' list too large; max size is '" + RateLimitService.MAX_BATCH_SIZE + "'";
  }
}
