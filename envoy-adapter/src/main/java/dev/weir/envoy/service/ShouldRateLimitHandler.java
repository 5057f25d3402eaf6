package dev.weir.envoy.service;

import dev.weir.core.grpc.Answers;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.metrics.EnvoyMetrics;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;

/**
 * Answers {@code ShouldRateLimit}: matches every descriptor, sends all counted ones to the core
 * {@link RateLimitService} in one call (so they follow the cluster's ownership, batching and GLOBAL
 * paths), and builds Envoy's response from the answers.
 *
 * <p>An error makes Envoy fail open (unless {@code failure_mode_deny}), so nothing a client can put
 * in a descriptor is answered with one: values of any length are counted (long ones under their
 * digest, see {@link CounterKeys}), and what cannot come from a real Envoy (a descriptor with more
 * than {@code WEIR_MAX_DESCRIPTOR_ENTRIES} entries or a limit override without a valid unit, more
 * descriptors than one core call carries) is answered OVER_LIMIT and counted as refused. Failures
 * complete the future with a {@link StatusRuntimeException}: {@code INVALID_ARGUMENT} for an empty
 * domain or descriptor list (which Envoy never sends), {@code UNAVAILABLE} when no configuration is
 * loaded or the core cannot answer an item whose answer could change the overall code (so Envoy's
 * {@code failure_mode_deny} applies); a failed item that could not is reported {@code UNKNOWN} in
 * its descriptor's status. The overall code is never {@code UNKNOWN}.
 *
 * <p>When the core answers every descriptor on this node, the returned future is already complete,
 * so the transport can answer on its own thread.
 */
public final class ShouldRateLimitHandler {

  private final ConfigHolder config;
  private final RateLimitService service;
  private final Clock clock;
  private final EnvoySettings settings;
  private final EnvoyMetrics metrics;
  private final ResponseBuilder responses;
  private final DescriptorPlanner planner;
  private final CheckMeter meter;
  private final UnknownDomains unknownDomains;
  private final MatchTracing tracing;

  /** Creates a handler answering from {@code config} through {@code service}, default limits. */
  public ShouldRateLimitHandler(
      ConfigHolder config,
      RateLimitService service,
      Clock clock,
      EnvoySettings settings,
      EnvoyMetrics metrics) {
    this(config, service, clock, settings, metrics, InputLimits.DEFAULTS, CheckMeter.NOOP);
  }

  /**
   * Creates a handler answering from {@code config} through {@code service}, writing counter keys
   * and refusing descriptors as {@code limits} say, and counting calls with {@code meter}.
   */
  public ShouldRateLimitHandler(
      ConfigHolder config,
      RateLimitService service,
      Clock clock,
      EnvoySettings settings,
      EnvoyMetrics metrics,
      InputLimits limits,
      CheckMeter meter) {
    this(
        config,
        service,
        clock,
        settings,
        metrics,
        limits,
        meter,
        OverLimitRecorder.NOOP,
        MatchTracing.NONE);
  }

  /**
   * Creates a handler answering from {@code config} through {@code service}, writing counter keys
   * and refusing descriptors as {@code limits} say, counting calls with {@code meter}, reporting
   * every descriptor answered over its limit to {@code overLimit}, and tracing each call's config
   * match with {@code tracing}.
   */
  public ShouldRateLimitHandler(
      ConfigHolder config,
      RateLimitService service,
      Clock clock,
      EnvoySettings settings,
      EnvoyMetrics metrics,
      InputLimits limits,
      CheckMeter meter,
      OverLimitRecorder overLimit,
      MatchTracing tracing) {
    this.config = config;
    this.service = service;
    this.clock = clock;
    this.settings = settings;
    this.metrics = metrics;
    this.meter = meter;
    CounterKeys keys = CounterKeys.of(limits);
    this.responses = new ResponseBuilder(settings, metrics, overLimit, keys);
    this.planner = new DescriptorPlanner(keys, limits.maxDescriptorEntries());
    this.unknownDomains = new UnknownDomains(metrics, clock);
    this.tracing = Objects.requireNonNull(tracing, "tracing");
  }

  /** Checks {@code request}'s descriptors against their limits and answers it. */
  public CompletableFuture<io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse> decide(
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request) {
    try {
      return answer(request);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(toStatus(e));
    }
  }

  private CompletableFuture<io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse> answer(
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request) {
    String domainName = request.getDomain();
    if (domainName.isEmpty()) {
      throw invalid("rate limit domain must not be empty");
    }
    int count = request.getDescriptorsCount();
    if (count == 0) {
      throw invalid("rate limit descriptor list must not be empty");
    }
    EnvoyConfig current = config.current().orElseThrow(ShouldRateLimitHandler::noConfig);
    long now = clock.wallMillis();
    long requestHits = Math.max(1, Integer.toUnsignedLong(request.getHitsAddend()));
    DomainConfig domain = current.domain(domainName).orElse(null);
    if (domain == null) {
      unknownDomains.record(domainName);
    }
    List<DescriptorPlan> plans = new ArrayList<>(count);
    if (RateLimitService.tooManyItems(count)) {
      meter.refused(RefusalReason.TOO_MANY_ITEMS);
      for (int i = 0; i < count; i++) {
        plans.add(new DescriptorPlan.Refused(RefusalReason.TOO_MANY_ITEMS));
      }
      return CompletableFuture.completedFuture(responses.build(request, plans, now));
    }
    List<RateLimitRequest> natives = new ArrayList<>(count);
    MatchTracing.Span span = tracing.start(domainName, count);
    try {
      plan(request, domainName, domain, requestHits, now, plans);
      for (int i = 0; i < plans.size(); i++) {
        DescriptorPlan plan = plans.get(i);
        if (plan instanceof DescriptorPlan.Limited limited) {
          for (DescriptorPlan.Policy policy : limited.policies()) {
            natives.add(policy.request());
            span.matched(policy.label());
          }
        } else if (plan instanceof DescriptorPlan.Unlimited unlimited) {
          span.matched(unlimited.label());
        }
      }
    } finally {
      span.end();
    }
    if (RateLimitService.tooManyItems(natives.size())) {
      // Fewer descriptors than the cap, but more counters than one call may check.
      meter.refused(RefusalReason.TOO_MANY_ITEMS);
      for (int i = 0; i < plans.size(); i++) {
        if (plans.get(i) instanceof DescriptorPlan.Limited) {
          plans.set(i, new DescriptorPlan.Refused(RefusalReason.TOO_MANY_ITEMS));
        }
      }
      return CompletableFuture.completedFuture(responses.build(request, plans, now));
    }
    if (natives.isEmpty()) {
      return CompletableFuture.completedFuture(responses.build(request, plans, now));
    }
    meter.started();
    CompletableFuture<List<RateLimitResponse>> answers;
    try {
      answers =
          settings.stopCacheKeyIncrementWhenOverlimit()
              ? checkStoppingIncrementsWhenOver(plans, natives)
              : service.decide(natives);
    } catch (RuntimeException e) {
      meter.failed(e);
      throw e;
    }
    if (Answers.completedNormally(answers)) {
      return CompletableFuture.completedFuture(
          respond(request, plans, answers.join(), now, span));
    }
    return answers.handle(
        (list, failure) -> {
          if (failure != null) {
            meter.failed(failure);
            throw toStatus(failure);
          }
          try {
            return respond(request, plans, list, now, span);
          } catch (RuntimeException e) {
            throw toStatus(e);
          }
        });
  }

  /** Matches each descriptor of {@code request} into {@code plans}, then applies replaces. */
  private void plan(
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request,
      String domainName,
      DomainConfig domain,
      long requestHits,
      long now,
      List<DescriptorPlan> plans) {
    boolean anyReplaces = false;
    for (int i = 0; i < request.getDescriptorsCount(); i++) {
      DescriptorPlan plan =
          planner.plan(domainName, domain, request.getDescriptors(i), requestHits, now);
      if (plan instanceof DescriptorPlan.Refused refused) {
        meter.refused(refused.reason());
      }
      anyReplaces |= !plan.replaces().isEmpty();
      plans.add(plan);
    }
    if (anyReplaces) {
      DescriptorPlan.applyReplaces(plans);
    }
  }

  private io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse respond(
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request,
      List<DescriptorPlan> plans,
      List<RateLimitResponse> answers,
      long now,
      MatchTracing.Span span) {
    DecidingPolicies deciding = DecidingPolicies.of(plans, answers);
    meter.answered(deciding.answers());
    Optional<String> failure = responses.decidingFailure(plans, deciding);
    if (failure.isPresent()) {
      throw Status.UNAVAILABLE.withDescription(failure.get()).asRuntimeException();
    }
    return responses.build(request, plans, deciding, now, span);
  }

  /**
   * Checks {@code natives}, the requests of {@code plans}' policies, first without consuming; if
   * the counters that would go over make the answer OVER_LIMIT, only they take their hits and the
   * others are queried ({@code WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT}). The second
   * check runs in the call's trace context, whichever thread completes the first.
   */
  private CompletableFuture<List<RateLimitResponse>> checkStoppingIncrementsWhenOver(
      List<DescriptorPlan> plans, List<RateLimitRequest> natives) {
    List<RateLimitRequest> probes = new ArrayList<>(natives.size());
    for (RateLimitRequest r : natives) {
      probes.add(r.withHits(0));
    }
    Function<List<RateLimitResponse>, CompletableFuture<List<RateLimitResponse>>> second =
        tracing.inCurrentContext(probed -> decideAfterProbes(plans, natives, probed));
    return service.decide(probes).thenCompose(second);
  }

  /**
   * Checks {@code natives}, the requests of {@code plans}' policies, after {@code probed}, their
   * answers as probes: all of them unless the answer would be OVER_LIMIT (through the counters
   * that would go over, or a refused descriptor), else only those going over take their hits and
   * the others are queried. A call that is admitted (the counters going over are shadow-mode or
   * quota-mode ones that do not refuse it, or global shadow mode is on) counts on every counter, so
   * an enforced limit holds.
   */
  private CompletableFuture<List<RateLimitResponse>> decideAfterProbes(
      List<DescriptorPlan> plans, List<RateLimitRequest> natives, List<RateLimitResponse> probed) {
    boolean[] over = new boolean[natives.size()];
    List<RateLimitResponse> expected = new ArrayList<>(natives.size());
    for (int i = 0; i < natives.size(); i++) {
      RateLimitResponse p = probed.get(i);
      over[i] =
          !p.isError()
              && (p.status() == dev.weir.core.model.Status.OVER_LIMIT
                  || p.remaining() < natives.get(i).hits());
      expected.add(
          over[i]
              ? RateLimitResponse.of(
                  dev.weir.core.model.Status.OVER_LIMIT, p.limit(), 0, p.resetTime())
              : p);
    }
    if (!responses.overLimit(plans, DecidingPolicies.of(plans, expected))) {
      return service.decide(natives);
    }
    List<RateLimitRequest> second = new ArrayList<>(natives.size());
    for (int i = 0; i < natives.size(); i++) {
      second.add(over[i] ? natives.get(i) : natives.get(i).withHits(0));
    }
    return service.decide(second);
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

  private static StatusRuntimeException noConfig() {
    return Status.UNAVAILABLE
        .withDescription("no rate limit configuration loaded")
        .asRuntimeException();
  }

  private static StatusRuntimeException invalid(String message) {
    return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
  }
}
