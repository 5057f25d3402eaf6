package dev.weir.gubernator;

import dev.weir.core.grpc.Answers;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The native front door's request path, shared by gRPC {@code GetRateLimits} (which arrives as core
 * requests) and the HTTP gateway (whose message it maps to them): answers items whose {@code name}
 * or {@code unique_key} is over the input limits with their error (the other items still go on),
 * sends the rest to the core service in one call, counts the call with the node's {@link
 * CheckMeter}, names the limit in every over-limit answer's metadata ({@link
 * OverLimitMetadata}) and, when traced ({@link NativeTracing}), on the call's span. An over-limit answer to a query or a refund ({@code hits} 0 or below) keeps
 * that metadata but is counted as under the limit and not reported as limited.
 */
public final class NativeCheck {

  private final RateLimitService service;
  private final InputLimits limits;
  private final CheckMeter meter;
  private final OverLimitRecorder overLimit;
  private final NativeTracing tracing;

  /** Creates the path to {@code service}, refusing fields over {@code limits}, counted by {@code meter}. */
  public NativeCheck(RateLimitService service, InputLimits limits, CheckMeter meter) {
    this(service, limits, meter, OverLimitRecorder.NOOP);
  }

  /**
   * Creates the path to {@code service}, refusing fields over {@code limits}, counted by {@code
   * meter}, reporting every item with hits answered over its limit to {@code overLimit}.
   */
  public NativeCheck(
      RateLimitService service,
      InputLimits limits,
      CheckMeter meter,
      OverLimitRecorder overLimit) {
    this(service, limits, meter, overLimit, NativeTracing.NONE);
  }

  /**
   * Creates the path to {@code service}, refusing fields over {@code limits}, counted by {@code
   * meter}, reporting every item with hits answered over its limit to {@code overLimit}, tracing
   * each call's answer with {@code tracing}.
   */
  public NativeCheck(
      RateLimitService service,
      InputLimits limits,
      CheckMeter meter,
      OverLimitRecorder overLimit,
      NativeTracing tracing) {
    this.service = Objects.requireNonNull(service, "service");
    this.limits = Objects.requireNonNull(limits, "limits");
    this.meter = Objects.requireNonNull(meter, "meter");
    this.overLimit = Objects.requireNonNull(overLimit, "overLimit");
    this.tracing = Objects.requireNonNull(tracing, "tracing");
  }

  /**
   * Answers {@code request}, as {@link #decide(List)} answers its items. The future is already
   * complete when the core answered every item on this node; it fails with {@link
   * RequestTooLargeException} for more than {@link RateLimitService#MAX_BATCH_SIZE} items.
   */
  public CompletableFuture<GetRateLimitsResp> decide(GetRateLimitsReq request) {
    if (RateLimitService.tooManyItems(request.getRequestsCount())) {
      return refuseTooManyItems();
    }
    CompletableFuture<List<RateLimitResponse>> answers = decide(ProtoMapping.toModel(request));
    if (!answers.isDone()) {
      return answers.thenApply(ProtoMapping::toProto);
    }
    try {
      return CompletableFuture.completedFuture(ProtoMapping.toProto(answers.join()));
    } catch (CompletionException failed) {
      return CompletableFuture.failedFuture(failed.getCause());
    }
  }

  /**
   * Answers {@code items} in order: an item whose {@code name} or {@code unique_key} is over the
   * input limits gets its error, the others the core's answer. {@code items} must not change until
   * the future completes. The future is already complete when the core answered every item on
   * this node; it fails with {@link RequestTooLargeException} for more than {@link
   * RateLimitService#MAX_BATCH_SIZE} items.
   */
  public CompletableFuture<List<RateLimitResponse>> decide(List<RateLimitRequest> items) {
    int n = items.size();
    if (RateLimitService.tooManyItems(n)) {
      return refuseTooManyItems();
    }
    List<RateLimitRequest> accepted = items;
    String[] errors = null;
    for (int i = 0; i < n; i++) {
      RateLimitRequest item = items.get(i);
      // An empty key or name is refused by the core's checks, which say so before any length.
      String error =
          item.uniqueKey().isEmpty() || item.name().isEmpty()
              ? null
              : limits.checkItem(item).orElse(null);
      if (error == null) {
        continue;
      }
      if (errors == null) {
        errors = new String[n];
      }
      errors[i] = error;
      meter.refused(RefusalReason.FIELD_TOO_LONG);
    }
    if (errors != null) {
      accepted = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        if (errors[i] == null) {
          accepted.add(items.get(i));
        }
      }
    }
    meter.started();
    NativeTracing.Call traced = tracing.start();
    CompletableFuture<List<RateLimitResponse>> answers;
    try {
      answers = service.decide(accepted);
    } catch (RuntimeException e) {
      meter.failed(e);
      return CompletableFuture.failedFuture(e);
    }
    String[] itemErrors = errors;
    List<RateLimitRequest> asked = accepted;
    if (Answers.completedNormally(answers)) {
      return CompletableFuture.completedFuture(
          respond(itemErrors, asked, answers.join(), traced));
    }
    return answers.handle(
        (list, failure) -> {
          if (failure != null) {
            meter.failed(failure);
            throw failure instanceof RuntimeException e ? e : new IllegalStateException(failure);
          }
          return respond(itemErrors, asked, list, traced);
        });
  }

  /**
   * Refuses a call found to carry more than {@link RateLimitService#MAX_BATCH_SIZE} items before
   * they were read, as {@link #decide(List)} refuses one: counts the refusal and returns a future
   * failed with {@link RequestTooLargeException}.
   */
  public <T> CompletableFuture<T> refuseTooManyItems() {
    meter.refused(RefusalReason.TOO_MANY_ITEMS);
    return CompletableFuture.failedFuture(RequestTooLargeException.overBatchSize());
  }

  private List<RateLimitResponse> respond(
      String[] errors,
      List<RateLimitRequest> asked,
      List<RateLimitResponse> core,
      NativeTracing.Call traced) {
    meter.answered(asked, core);
    traced.answered(asked, core);
    List<RateLimitResponse> answers = OverLimitMetadata.annotate(asked, core, overLimit);
    if (errors == null) {
      return answers;
    }
    meter.answeredWithError(errors.length - asked.size());
    List<RateLimitResponse> out = new ArrayList<>(errors.length);
    int next = 0;
    for (String error : errors) {
      out.add(error != null ? RateLimitResponse.error(error) : answers.get(next++));
    }
    return out;
  }
}
