package dev.weir.envoy.service;

import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.metrics.EnvoyMetrics;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Answers {@code ShouldRateLimit}: matches every descriptor, sends all counted ones to the core
 * {@link RateLimitService} in one call (so they follow the cluster's ownership, batching and GLOBAL
 * paths), and builds Envoy's response from the answers.
 *
 * <p>Failures complete the future with a {@link StatusRuntimeException}: {@code INVALID_ARGUMENT}
 * for a bad request, {@code UNAVAILABLE} when no configuration is loaded or the core cannot answer
 * (so Envoy's {@code failure_mode_deny} applies). The overall code is never {@code UNKNOWN}.
 */
public final class ShouldRateLimitHandler {

  private final ConfigHolder config;
  private final RateLimitService service;
  private final Clock clock;
  private final EnvoySettings settings;
  private final EnvoyMetrics metrics;
  private final ResponseBuilder responses;
  private final InputLimits limits;
  private final WeirMetrics refusals;
  private final UnknownDomains unknownDomains;

  /** Creates a handler answering from {@code config} through {@code service}, default limits. */
  public ShouldRateLimitHandler(
      ConfigHolder config,
      RateLimitService service,
      Clock clock,
      EnvoySettings settings,
      EnvoyMetrics metrics) {
    this(config, service, clock, settings, metrics, InputLimits.DEFAULTS, WeirMetrics.NOOP);
  }

  /**
   * Creates a handler answering from {@code config} through {@code service}, refusing requests over
   * {@code limits} with {@code INVALID_ARGUMENT} and counting them in {@code refusals}.
   */
  public ShouldRateLimitHandler(
      ConfigHolder config,
      RateLimitService service,
      Clock clock,
      EnvoySettings settings,
      EnvoyMetrics metrics,
      InputLimits limits,
      WeirMetrics refusals) {
    this.limits = limits;
    this.refusals = refusals;
    this.config = config;
    this.service = service;
    this.clock = clock;
    this.settings = settings;
    this.metrics = metrics;
    this.responses = new ResponseBuilder(settings, metrics);
    this.unknownDomains = new UnknownDomains(metrics, clock);
  }

  /** Answers {@code request}. */
  public CompletableFuture<io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse> handle(
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request) {
    CompletableFuture<io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse> answer;
    try {
      answer = answer(request);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(toStatus(e));
    }
    return answer.exceptionally(
        failure -> {
          throw toStatus(failure);
        });
  }

  private CompletableFuture<io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse> answer(
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request) {
    if (request.getDomain().isEmpty()) {
      throw invalid("rate limit domain must not be empty");
    }
    if (request.getDescriptorsCount() == 0) {
      throw invalid("rate limit descriptor list must not be empty");
    }
    Optional<DescriptorLimits.Refusal> refusal = DescriptorLimits.check(request, limits);
    if (refusal.isPresent()) {
      refusals.refused(refusal.get().reason());
      throw invalid(refusal.get().message());
    }
    EnvoyConfig current =
        config
            .current()
            .orElseThrow(
                () ->
                    Status.UNAVAILABLE
                        .withDescription("no rate limit configuration loaded")
                        .asRuntimeException());
    long now = clock.wallMillis();
    long requestHits = Math.max(1, Integer.toUnsignedLong(request.getHitsAddend()));
    Optional<DomainConfig> domain = current.domain(request.getDomain());
    unknownDomains.recordIfMissing(request.getDomain(), domain);
    List<DescriptorPlan> plans = new ArrayList<>(request.getDescriptorsCount());
    for (int i = 0; i < request.getDescriptorsCount(); i++) {
      RateLimitDescriptor descriptor = request.getDescriptors(i);
      plans.add(
          DescriptorPlanner.plan(request.getDomain(), domain, descriptor, i, requestHits, now));
    }
    applyReplaces(plans);
    List<RateLimitRequest> natives = new ArrayList<>();
    for (DescriptorPlan plan : plans) {
      if (plan instanceof DescriptorPlan.Limited limited) {
        natives.add(limited.request());
      }
    }
    if (natives.isEmpty()) {
      return CompletableFuture.completedFuture(responses.build(plans, List.of(), now));
    }
    CompletableFuture<List<RateLimitResponse>> answers =
        settings.stopCacheKeyIncrementWhenOverlimit()
            ? checkStoppingIncrementsWhenOver(natives)
            : check(natives);
    return answers.thenApply(list -> responses.build(plans, list, now));
  }

  private static void applyReplaces(List<DescriptorPlan> plans) {
    Set<String> replaced = new HashSet<>();
    for (DescriptorPlan plan : plans) {
      replaced.addAll(plan.replaces());
    }
    if (replaced.isEmpty()) {
      return;
    }
    for (int i = 0; i < plans.size(); i++) {
      String name = plans.get(i).ruleName();
      if (!name.isEmpty() && replaced.contains(name)) {
        plans.set(i, new DescriptorPlan.NoLimit());
      }
    }
  }

  private CompletableFuture<List<RateLimitResponse>> check(List<RateLimitRequest> natives) {
    return service.check(natives).thenApply(ShouldRateLimitHandler::requireNoItemError);
  }

  /**
   * Checks first without consuming; if any counter would go over, only the counters going over take
   * their hits and the others are queried ({@code
   * WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT}).
   */
  private CompletableFuture<List<RateLimitResponse>> checkStoppingIncrementsWhenOver(
      List<RateLimitRequest> natives) {
    List<RateLimitRequest> probes = new ArrayList<>(natives.size());
    for (RateLimitRequest r : natives) {
      probes.add(r.withHits(0));
    }
    return check(probes)
        .thenCompose(
            probed -> {
              boolean anyOver = false;
              boolean[] over = new boolean[natives.size()];
              for (int i = 0; i < natives.size(); i++) {
                RateLimitResponse p = probed.get(i);
                over[i] =
                    p.status() == dev.weir.core.model.Status.OVER_LIMIT
                        || p.remaining() < natives.get(i).hits();
                anyOver |= over[i];
              }
              if (!anyOver) {
                return check(natives);
              }
              List<RateLimitRequest> second = new ArrayList<>(natives.size());
              for (int i = 0; i < natives.size(); i++) {
                second.add(over[i] ? natives.get(i) : natives.get(i).withHits(0));
              }
              return check(second);
            });
  }

  private static List<RateLimitResponse> requireNoItemError(List<RateLimitResponse> answers) {
    for (RateLimitResponse answer : answers) {
      if (answer.isError()) {
        throw Status.UNAVAILABLE.withDescription(answer.error()).asRuntimeException();
      }
    }
    return answers;
  }

  private StatusRuntimeException toStatus(Throwable failure) {
    Throwable cause = failure;
    while ((cause instanceof CompletionException || cause instanceof ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    metrics.serviceError();
    if (cause instanceof StatusRuntimeException e) {
      return e;
    }
    if (cause instanceof RequestTooLargeException e) {
      return Status.OUT_OF_RANGE.withDescription(e.getMessage()).asRuntimeException();
    }
    return Status.UNAVAILABLE
        .withDescription(String.valueOf(cause.getMessage()))
        .withCause(cause)
        .asRuntimeException();
  }

  private static StatusRuntimeException invalid(String message) {
    return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
  }
}
