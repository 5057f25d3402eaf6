package dev.weir.core.cluster.peer;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.FixedWindowSnapshot;
import dev.weir.proto.gubernator.LeakyBucketSnapshot;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.SlidingWindowSnapshot;
import dev.weir.proto.gubernator.TokenBucketSnapshot;
import java.util.Optional;

/** Conversions between the core model and the peer protocol's messages. */
public final class PeerProtos {

  private PeerProtos() {}

  /** Returns the wire form of {@code r}; {@code created_at} is sent when set. */
  public static RateLimitReq toProto(RateLimitRequest r) {
    RateLimitReq.Builder b =
        RateLimitReq.newBuilder()
            .setName(r.name())
            .setUniqueKey(r.uniqueKey())
            .setHits(r.hits())
            .setLimit(r.limit())
            .setDuration(r.duration())
            .setAlgorithmValue(r.algorithm())
            .setBehaviorValue(r.behavior())
            .setBurst(r.burst())
            .putAllMetadata(r.metadata());
    if (r.createdAt() != 0) {
      b.setCreatedAt(r.createdAt());
    }
    return b.build();
  }

  /** Returns the model form of {@code r}; an absent {@code created_at} becomes 0. */
  public static RateLimitRequest fromProto(RateLimitReq r) {
    return new RateLimitRequest(
        r.getName(),
        r.getUniqueKey(),
        r.getHits(),
        r.getLimit(),
        r.getDuration(),
        r.getAlgorithmValue(),
        r.getBehaviorValue(),
        r.getBurst(),
        r.hasCreatedAt() ? r.getCreatedAt() : 0,
        r.getMetadataMap());
  }

  /** Returns the wire form of {@code r}. */
  public static RateLimitResp toProto(RateLimitResponse r) {
    return RateLimitResp.newBuilder()
        .setStatusValue(r.status().ordinal())
        .setLimit(r.limit())
        .setRemaining(r.remaining())
        .setResetTime(r.resetTime())
        .setError(r.error())
        .putAllMetadata(r.metadata())
        .build();
  }

  /** Returns the model form of {@code r}. */
  public static RateLimitResponse fromProto(RateLimitResp r) {
    return new RateLimitResponse(
        r.getStatusValue() == 1 ? Status.OVER_LIMIT : Status.UNDER_LIMIT,
        r.getLimit(),
        r.getRemaining(),
        r.getResetTime(),
        r.getError(),
        r.getMetadataMap());
  }

  /** Returns the snapshot of {@code state} under {@code key}. */
  public static BucketSnapshot toSnapshot(String key, BucketState state) {
    BucketSnapshot.Builder b = BucketSnapshot.newBuilder().setKey(key);
    if (state instanceof TokenBucketState t) {
      b.setTokenBucket(
          TokenBucketSnapshot.newBuilder()
              .setStatusValue(t.status().ordinal())
              .setLimit(t.limit())
              .setDuration(t.duration())
              .setRemaining(t.remaining())
              .setCreatedAt(t.createdAt())
              .setExpireAt(t.expireAt()));
    } else if (state instanceof LeakyBucketState l) {
      b.setLeakyBucket(
          LeakyBucketSnapshot.newBuilder()
              .setLimit(l.limit())
              .setDuration(l.duration())
              .setBurst(l.burst())
              .setRemaining(l.remaining())
              .setUpdatedAt(l.updatedAt())
              .setExpireAt(l.expireAt()));
    } else if (state instanceof FixedWindowState f) {
      b.setFixedWindow(
          FixedWindowSnapshot.newBuilder()
              .setLimit(f.limit())
              .setDuration(f.duration())
              .setWindowStart(f.windowStart())
              .setCount(f.count())
              .setExpireAt(f.expireAt()));
    } else if (state instanceof SlidingWindowState s) {
      b.setSlidingWindow(
          SlidingWindowSnapshot.newBuilder()
              .setLimit(s.limit())
              .setDuration(s.duration())
              .setWindowStart(s.windowStart())
              .setPreviousCount(s.previousCount())
              .setCurrentCount(s.currentCount())
              .setExpireAt(s.expireAt()));
    }
    return b.build();
  }

  /** Returns the state a snapshot carries, or empty when it carries none (or one this node does not know). */
  public static Optional<BucketState> fromSnapshot(BucketSnapshot s) {
    switch (s.getStateCase()) {
      case TOKEN_BUCKET:
        TokenBucketSnapshot t = s.getTokenBucket();
        return Optional.of(
            new TokenBucketState(
                t.getStatusValue() == 1 ? Status.OVER_LIMIT : Status.UNDER_LIMIT,
                t.getLimit(),
                t.getDuration(),
                t.getRemaining(),
                t.getCreatedAt(),
                t.getExpireAt()));
      case LEAKY_BUCKET:
        LeakyBucketSnapshot l = s.getLeakyBucket();
        return Optional.of(
            new LeakyBucketState(
                l.getLimit(),
                l.getDuration(),
                l.getBurst(),
                l.getRemaining(),
                l.getUpdatedAt(),
                l.getExpireAt()));
      case FIXED_WINDOW:
        FixedWindowSnapshot f = s.getFixedWindow();
        return Optional.of(
            new FixedWindowState(
                f.getLimit(), f.getDuration(), f.getWindowStart(), f.getCount(), f.getExpireAt()));
      case SLIDING_WINDOW:
        SlidingWindowSnapshot w = s.getSlidingWindow();
        return Optional.of(
            new SlidingWindowState(
                w.getLimit(),
                w.getDuration(),
                w.getWindowStart(),
                w.getPreviousCount(),
                w.getCurrentCount(),
                w.getExpireAt()));
      default:
        return Optional.empty();
    }
  }

  /** Returns the wire form of {@code u}. */
  public static dev.weir.proto.gubernator.QuotaUsage toProto(QuotaUsage u) {
    return dev.weir.proto.gubernator.QuotaUsage.newBuilder()
        .setRule(toProto(u.rule().withHits(0).withBehavior(0).withCreatedAt(0)))
        .setClient(u.client())
        .setAllowed(u.allowed())
        .setDenied(u.denied())
        .setElapsedMs(u.elapsedMillis())
        .setIntervalMs(u.intervalMillis())
        .setReleased(u.released())
        .build();
  }

  /** Returns the model form of {@code u}. */
  public static QuotaUsage fromProto(dev.weir.proto.gubernator.QuotaUsage u) {
    return new QuotaUsage(
        fromProto(u.getRule()),
        u.getClient(),
        u.getAllowed(),
        u.getDenied(),
        u.getElapsedMs(),
        u.getIntervalMs(),
        u.getReleased());
  }

  /** Returns the wire form of {@code s}. */
  public static dev.weir.proto.gubernator.QuotaShare toProto(QuotaShare s) {
    return dev.weir.proto.gubernator.QuotaShare.newBuilder()
        .setMillirequestsPerSecond(s.milliRate())
        .setBurst(s.burst())
        .setSpentUntil(s.spentUntil())
        .setEpoch(s.epoch())
        .setSequence(s.sequence())
        .setError(s.error())
        .build();
  }

  /** Returns the model form of {@code s}. */
  public static QuotaShare fromProto(dev.weir.proto.gubernator.QuotaShare s) {
    return new QuotaShare(
        s.getMillirequestsPerSecond(),
        s.getBurst(),
        s.getSpentUntil(),
        s.getEpoch(),
        s.getSequence(),
        s.getError());
  }

  /** Returns the wire form of {@code p}. */
  public static dev.weir.proto.gubernator.QuotaPush toProto(QuotaPush p) {
    return dev.weir.proto.gubernator.QuotaPush.newBuilder()
        .setKey(p.key())
        .setClient(p.client())
        .setShare(toProto(p.share()))
        .build();
  }

  /** Returns the model form of {@code p}. */
  public static QuotaPush fromProto(dev.weir.proto.gubernator.QuotaPush p) {
    return new QuotaPush(p.getKey(), p.getClient(), fromProto(p.getShare()));
  }
}
