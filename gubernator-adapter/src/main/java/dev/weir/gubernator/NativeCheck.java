package dev.weir.gubernator;

import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.limiter.LocalRateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * The native front door's request path, shared by gRPC {@code GetRateLimits} and the HTTP gateway:
 * turns the wire request into core requests, answers items whose {@code name} or {@code unique_key}
 * is over the input limits with their error (the other items still go on), sends the rest to the
 * core service in one call, and counts the call with the node's {@link CheckMeter}.
 */
public final class NativeCheck {

  private final RateLimitService service;
  private final InputLimits limits;
  private final CheckMeter meter;

  /** Creates the path to {@code service}, refusing fields over {@code limits}, counted by {@code meter}. */
  public NativeCheck(RateLimitService service, InputLimits limits, CheckMeter meter) {
    this.service = Objects.requireNonNull(service, "service");
    this.limits = Objects.requireNonNull(limits, "limits");
    this.meter = Objects.requireNonNull(meter, "meter");
  }

  /**
   * Answers {@code request}. The future is already complete when the core answered every item on
   * this node; it fails with {@link RequestTooLargeException} for more than {@link
   * RateLimitService#MAX_BATCH_SIZE} items.
   */
  public CompletableFuture<GetRateLimitsResp> check(GetRateLimitsReq request) {
    int n = request.getRequestsCount();
    if (n > RateLimitService.MAX_BATCH_SIZE) {
      meter.refused(RefusalReason.TOO_MANY_ITEMS);
      return CompletableFuture.failedFuture(
          new RequestTooLargeException(LocalRateLimitService.TOO_LARGE_MESSAGE));
    }
    List<RateLimitRequest> accepted = new ArrayList<>(n);
    String[] errors = null;
    for (int i = 0; i < n; i++) {
      RateLimitRequest item = ProtoMapping.toModel(request.getRequests(i));
      String error = limits.checkItem(item).orElse(null);
      if (error == null) {
        accepted.add(item);
        continue;
      }
      if (errors == null) {
        errors = new String[n];
      }
      errors[i] = error;
      meter.refused(RefusalReason.FIELD_TOO_LONG);
    }
    meter.started();
    CompletableFuture<List<RateLimitResponse>> answers;
    try {
      answers = service.check(accepted);
    } catch (RuntimeException e) {
      meter.failed(e);
      return CompletableFuture.failedFuture(e);
    }
    String[] itemErrors = errors;
    if (answers.isDone() && !answers.isCompletedExceptionally()) {
      return CompletableFuture.completedFuture(respond(itemErrors, answers.join()));
    }
    return answers.handle(
        (list, failure) -> {
          if (failure != null) {
            meter.failed(failure);
            throw failure instanceof RuntimeException e ? e : new IllegalStateException(failure);
          }
          return respond(itemErrors, list);
        });
  }

  private GetRateLimitsResp respond(String[] errors, List<RateLimitResponse> answers) {
    meter.answered(answers);
    GetRateLimitsResp.Builder out = GetRateLimitsResp.newBuilder();
    int next = 0;
    int n = errors == null ? answers.size() : errors.length;
    for (int i = 0; i < n; i++) {
      if (errors != null && errors[i] != null) {
        out.addResponses(ProtoMapping.toProto(RateLimitResponse.error(errors[i])));
      } else {
        out.addResponses(ProtoMapping.toProto(answers.get(next++)));
      }
    }
    return out.build();
  }
}
