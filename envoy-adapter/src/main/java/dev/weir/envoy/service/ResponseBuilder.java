package dev.weir.envoy.service;

import com.google.protobuf.Duration;
import dev.weir.core.toplimited.LimitedKey;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.CounterNames;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.metrics.RuleCounters;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.IntPredicate;

/**
 * Builds Envoy's response from the descriptor plans and the core's answers, as envoyproxy/ratelimit
 * does: per-rule shadow and quota mode (and global quota mode), the overall code, global shadow
 * mode, the RateLimit headers (the RateLimit-* trio or the IETF fields), the dynamic metadata, and
 * the per-rule hit counters; reports every descriptor over its limit (shadow-mode ones too) to an
 * {@link OverLimitRecorder}.
 */
final class ResponseBuilder {

  /** {@code limit_remaining} of an unlimited descriptor: the largest uint32. */
  static final int UNLIMITED_REMAINING = (int) 0xFFFF_FFFFL;

  private static final DescriptorStatus NO_LIMIT =
      DescriptorStatus.newBuilder().setCode(Code.OK).build();
  private static final DescriptorStatus UNLIMITED =
      DescriptorStatus.newBuilder().setCode(Code.OK).setLimitRemaining(UNLIMITED_REMAINING).build();
  private static final DescriptorStatus REFUSED =
      DescriptorStatus.newBuilder().setCode(Code.OVER_LIMIT).build();

  /** The status of a descriptor whose counter could not be checked (its owner did not answer). */
  private static final DescriptorStatus NOT_CHECKED =
      DescriptorStatus.newBuilder().setCode(Code.UNKNOWN).build();

  private final EnvoySettings settings;
  private final EnvoyMetrics metrics;
  private final OverLimitRecorder overLimit;
  private final CounterKeys keys;

  /**
   * Creates the builder answering as {@code settings} say, counting in {@code metrics}, and
   * reporting every descriptor over its limit to {@code overLimit} with its values bounded by
   * {@code keys}.
   */
  ResponseBuilder(
      EnvoySettings settings,
      EnvoyMetrics metrics,
      OverLimitRecorder overLimit,
      CounterKeys keys) {
    this.settings = settings;
    this.metrics = metrics;
    this.overLimit = overLimit;
    this.keys = keys;
  }

  /**
   * Returns the response to {@code request} for {@code plans}, none of which has a limit to check,
   * where {@code now} is the request's time.
   */
  RateLimitResponse build(
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request,
      List<DescriptorPlan> plans,
      long now) {
    return build(
        request, plans, DecidingPolicies.of(plans, List.of()), now, MatchTracing.Span.NONE);
  }

  /**
   * Returns the response to {@code request} for {@code plans}, where {@code deciding} holds the
   * deciding policy of each {@link DescriptorPlan.Limited} plan with the core's answer to it and
   * {@code now} is the request's time, telling {@code span} which rules were over their limit.
   */
  RateLimitResponse build(
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request,
      List<DescriptorPlan> plans,
      DecidingPolicies deciding,
      long now,
      MatchTracing.Span span) {
    List<DescriptorStatus> statuses = new ArrayList<>(plans.size());
    List<Boolean> quota = new ArrayList<>(plans.size());
    DescriptorPlan.Policy firedPolicy = null;
    boolean firedShadow = false;
    for (int d = 0; d < plans.size(); d++) {
      DescriptorPlan plan = plans.get(d);
      if (plan instanceof DescriptorPlan.Limited limited) {
        DescriptorPlan.Policy policy = deciding.policy(d);
        dev.weir.core.model.RateLimitResponse answer = deciding.answer(d);
        statuses.add(status(limited, policy, answer, now));
        if (answer.status() == dev.weir.core.model.Status.OVER_LIMIT && !answer.isError()) {
          record(request.getDomain(), policy, request.getDescriptors(d));
          span.overLimit(policy.label(), limited.shadowMode());
          if (firedPolicy == null || firedShadow && !limited.shadowMode()) {
            firedPolicy = policy;
            firedShadow = limited.shadowMode();
          }
        }
      } else if (plan instanceof DescriptorPlan.Unlimited) {
        statuses.add(UNLIMITED);
      } else if (plan instanceof DescriptorPlan.Refused) {
        statuses.add(REFUSED);
      } else {
        statuses.add(NO_LIMIT);
      }
      quota.add(quota(plan));
    }
    boolean over = over(i -> statuses.get(i).getCode() == Code.OVER_LIMIT, quota);
    boolean globallyShadowed = over && settings.shadowMode();
    if (globallyShadowed) {
      metrics.globalShadowMode();
      over = false;
    }
    span.answered(globallyShadowed);
    RateLimitResponse.Builder response =
        RateLimitResponse.newBuilder()
            .setOverallCode(over ? Code.OVER_LIMIT : Code.OK)
            .addAllStatuses(statuses);
    if (settings.responseHeadersEnabled()) {
      int chosen = chosen(statuses, quota);
      if (settings.headersFormat() == EnvoySettings.HeadersFormat.IETF) {
        IetfRateLimitFields.add(response, plans, deciding, statuses, chosen);
      } else if (chosen >= 0) {
        addHeaders(response, statuses.get(chosen));
      }
    }
    if (settings.responseDynamicMetadata()) {
      response.setDynamicMetadata(
          DynamicMetadata.of(
              request, plans, statuses, firedPolicy, firedShadow || globallyShadowed));
    }
    return response.build();
  }

  /**
   * Returns whether the response {@link #build} makes for {@code plans} and {@code deciding} has
   * the overall code OVER_LIMIT (per-rule shadow and quota mode, global quota and shadow mode
   * applied), counting nothing.
   */
  boolean overLimit(List<DescriptorPlan> plans, DecidingPolicies deciding) {
    List<Boolean> quota = new ArrayList<>(plans.size());
    boolean[] statusOver = new boolean[plans.size()];
    for (int d = 0; d < plans.size(); d++) {
      DescriptorPlan plan = plans.get(d);
      if (plan instanceof DescriptorPlan.Limited limited) {
        statusOver[d] = enforcedOver(limited, deciding.answer(d));
      } else {
        statusOver[d] = plan instanceof DescriptorPlan.Refused;
      }
      quota.add(quota(plan));
    }
    return over(i -> statusOver[i], quota) && !settings.shadowMode();
  }

  /**
   * Returns the error of a descriptor whose failed item could change the overall code of the
   * response {@link #build} makes for {@code plans} and {@code deciding}, before global shadow
   * mode, counting nothing; empty when the failed items (if any) cannot change it. A failed item
   * changes nothing when its descriptor's deciding policy is another one's over-limit answer, when
   * its rule is in shadow mode (its status is never OVER_LIMIT), or when the other descriptors
   * decide the code whatever it would have said. The error named is that of the first failed
   * non-quota descriptor, which changes the code on its own; failing that, of the first failed
   * quota one (the quota descriptors then change it only together).
   */
  Optional<String> decidingFailure(List<DescriptorPlan> plans, DecidingPolicies deciding) {
    List<Boolean> quota = new ArrayList<>(plans.size());
    boolean[] statusOver = new boolean[plans.size()];
    boolean[] failed = new boolean[plans.size()];
    int firstFailed = -1;
    int firstFailedNonQuota = -1;
    for (int d = 0; d < plans.size(); d++) {
      DescriptorPlan plan = plans.get(d);
      quota.add(quota(plan));
      if (plan instanceof DescriptorPlan.Limited limited) {
        dev.weir.core.model.RateLimitResponse answer = deciding.answer(d);
        statusOver[d] = enforcedOver(limited, answer);
        failed[d] = answer.isError() && !limited.shadowMode();
        firstFailed = failed[d] && firstFailed < 0 ? d : firstFailed;
        firstFailedNonQuota =
            failed[d] && !quota.get(d) && firstFailedNonQuota < 0 ? d : firstFailedNonQuota;
      } else {
        statusOver[d] = plan instanceof DescriptorPlan.Refused;
      }
    }
    if (firstFailed < 0
        || over(i -> statusOver[i], quota) == over(i -> statusOver[i] || failed[i], quota)) {
      return Optional.empty();
    }
    return Optional.of(
        deciding.answer(firstFailedNonQuota >= 0 ? firstFailedNonQuota : firstFailed).error());
  }

  /**
   * Returns whether {@code plan} is a quota descriptor: its rule is in quota mode, or the global
   * quota mode is on and it is not unlimited or refused (as envoyproxy/ratelimit, an unmatched or
   * replaced descriptor is then a quota descriptor too, one that passes).
   */
  private boolean quota(DescriptorPlan plan) {
    if (plan instanceof DescriptorPlan.Limited limited) {
      return limited.quotaMode() || settings.quotaMode();
    }
    if (plan instanceof DescriptorPlan.NoLimit) {
      return settings.quotaMode();
    }
    return false;
  }

  /**
   * Returns whether the overall code is OVER_LIMIT before global shadow mode, where {@code
   * statusOver} says which statuses are OVER_LIMIT and {@code quota} which descriptors are quota
   * ones: any other descriptor is over, or there are quota descriptors and all of them are.
   */
  private static boolean over(IntPredicate statusOver, List<Boolean> quota) {
    boolean over = false;
    int quotaCount = 0;
    int quotaOver = 0;
    for (int i = 0; i < quota.size(); i++) {
      if (quota.get(i)) {
        quotaCount++;
        quotaOver += statusOver.test(i) ? 1 : 0;
      } else {
        over |= statusOver.test(i);
      }
    }
    return over || quotaCount > 0 && quotaOver == quotaCount;
  }

  /** Returns whether {@code answer} makes {@code plan}'s status OVER_LIMIT (shadow mode applied). */
  private static boolean enforcedOver(
      DescriptorPlan.Limited plan, dev.weir.core.model.RateLimitResponse answer) {
    return !answer.isError()
        && answer.status() == dev.weir.core.model.Status.OVER_LIMIT
        && !plan.shadowMode();
  }

  /**
   * The most characters of a descriptor's entries an over-limit record keeps as written (Envoy's
   * descriptors are far shorter); the entries past it are kept as one, {@code …} and their digest.
   */
  static final int MAX_RECORDED_CHARS = 1024;

  /** The key of the entry that stands for the entries past {@link #MAX_RECORDED_CHARS}. */
  static final String MORE_ENTRIES = "…";

  /**
   * Reports {@code descriptor}, whose {@code policy} is over its limit, to the over-limit recorder:
   * its entries with values bounded as counter keys bound them, and at most {@link
   * #MAX_RECORDED_CHARS} of them as written.
   */
  private void record(String domain, DescriptorPlan.Policy policy, RateLimitDescriptor descriptor) {
    int n = descriptor.getEntriesCount();
    List<String> entries = new ArrayList<>(2 * n);
    int chars = 0;
    for (int i = 0; i < n; i++) {
      RateLimitDescriptor.Entry e = descriptor.getEntries(i);
      String key = keys.bounded(e.getKey());
      String value = keys.bounded(e.getValue());
      chars += key.length() + value.length();
      if (chars > MAX_RECORDED_CHARS) {
        entries.add(MORE_ENTRIES);
        entries.add(CounterKeys.digest(entriesFrom(descriptor, i)));
        break;
      }
      entries.add(key);
      entries.add(value);
    }
    overLimit.overLimit(
        new LimitedKey(LimitedKey.ENVOY, domain, policy.label(), entries),
        policy.request().hits());
  }

  /** Returns the entries of {@code descriptor} from {@code first} on, each length-prefixed. */
  private static String entriesFrom(RateLimitDescriptor descriptor, int first) {
    StringBuilder out = new StringBuilder();
    for (int i = first; i < descriptor.getEntriesCount(); i++) {
      RateLimitDescriptor.Entry e = descriptor.getEntries(i);
      CounterNames.lengthPrefixed(out, e.getKey());
      CounterNames.lengthPrefixed(out, e.getValue());
    }
    return out.toString();
  }

  private DescriptorStatus status(
      DescriptorPlan.Limited plan,
      DescriptorPlan.Policy policy,
      dev.weir.core.model.RateLimitResponse answer,
      long now) {
    if (answer.isError()) {
      return NOT_CHECKED;
    }
    boolean over = answer.status() == dev.weir.core.model.Status.OVER_LIMIT;
    long remaining = Math.max(0, Math.min(answer.remaining(), 0xFFFF_FFFFL));
    long untilResetSeconds = ceilSeconds(Math.max(0, answer.resetTime() - now));
    count(plan, policy, over, remaining);
    Code code = enforcedOver(plan, answer) ? Code.OVER_LIMIT : Code.OK;
    return DescriptorStatus.newBuilder()
        .setCode(code)
        .setCurrentLimit(
            RateLimitResponse.RateLimit.newBuilder()
                .setRequestsPerUnit((int) policy.requestsPerUnit())
                .setUnit(policy.unit())
                .setName(policy.ruleName()))
        .setLimitRemaining((int) (over ? 0 : remaining))
        .setDurationUntilReset(Duration.newBuilder().setSeconds(untilResetSeconds))
        .build();
  }

  /**
   * Returns {@code millis} rounded up to whole seconds, as envoyproxy/ratelimit reports the time
   * to reset ({@code divider - now % divider} in seconds): Envoy's {@code x-ratelimit-reset} reads
   * only the seconds, so a fraction would show one second less and 0 during the last second.
   */
  static long ceilSeconds(long millis) {
    return millis / 1000 + (millis % 1000 == 0 ? 0 : 1);
  }

  /**
   * Counts {@code policy}'s hits as envoyproxy/ratelimit does: every hit in {@code total_hits};
   * admitted hits in {@code within_limit} and, those above the near-limit threshold ({@code
   * floor(limit * NEAR_LIMIT_RATIO)}), in {@code near_limit}; of refused hits, those beyond what
   * remained in {@code over_limit} (all of them when nothing remained) and those within it but above
   * the threshold in {@code near_limit}; the {@code over_limit} hits of a shadow-mode rule in
   * {@code shadow_mode} too. {@code remaining} is what the answer says is left: after the hits
   * when admitted, before them when refused (0 for a fixed window, which counts refused hits: they
   * are then all over).
   */
  private void count(
      DescriptorPlan.Limited plan, DescriptorPlan.Policy policy, boolean over, long remaining) {
    long hits = policy.request().hits();
    if (hits == 0) {
      return;
    }
    RuleCounters counters =
        metrics.rule(plan.domain(), plan.statsRule(), plan.statsRuleFromValues());
    counters.totalHits().increment(hits);
    long limit = policy.requestsPerUnit();
    long nearThreshold = (long) Math.floor(limit * settings.nearLimitRatio());
    if (over) {
      long left = Math.min(remaining, hits);
      counters.overLimit().increment(hits - left);
      if (plan.shadowMode()) {
        counters.shadowMode().increment(hits - left);
      }
      if (left > 0) {
        counters.nearLimit().increment(Math.min(limit - nearThreshold, left));
      }
      return;
    }
    counters.withinLimit().increment(hits);
    long after = limit - remaining;
    if (after > nearThreshold) {
      long before = after - hits;
      counters.nearLimit().increment(after - Math.max(before, nearThreshold));
    }
  }

  /**
   * Returns the index of the status the RateLimit headers report, as envoyproxy/ratelimit picks it:
   * the last one over the limit (quota-mode ones aside), else the first with the least remaining;
   * -1 when no status has a limit.
   */
  static int chosen(List<DescriptorStatus> statuses, List<Boolean> quota) {
    int chosen = -1;
    boolean chosenOver = false;
    for (int i = 0; i < statuses.size(); i++) {
      DescriptorStatus s = statuses.get(i);
      if (!s.hasCurrentLimit()) {
        continue;
      }
      if (s.getCode() == Code.OVER_LIMIT && !quota.get(i)) {
        chosen = i;
        chosenOver = true;
      } else if (!chosenOver
          && (chosen < 0
              || Integer.toUnsignedLong(s.getLimitRemaining())
                  < Integer.toUnsignedLong(statuses.get(chosen).getLimitRemaining()))) {
        chosen = i;
      }
    }
    return chosen;
  }

  /** Adds the RateLimit-* trio of {@code chosen}. */
  private void addHeaders(RateLimitResponse.Builder response, DescriptorStatus chosen) {
    long resetSeconds = chosen.getDurationUntilReset().getSeconds();
    response
        .addResponseHeadersToAdd(
            header(
                settings.limitHeader(),
                Integer.toUnsignedString(chosen.getCurrentLimit().getRequestsPerUnit())))
        .addResponseHeadersToAdd(
            header(
                settings.remainingHeader(), Integer.toUnsignedString(chosen.getLimitRemaining())))
        .addResponseHeadersToAdd(header(settings.resetHeader(), Long.toString(resetSeconds)));
  }

  private static HeaderValue header(String key, String value) {
    return HeaderValue.newBuilder().setKey(key).setValue(value).build();
  }
}
