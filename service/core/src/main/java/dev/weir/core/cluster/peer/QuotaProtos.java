package dev.weir.core.cluster.peer;

import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;

/**
 * The mapping between the quota model ({@link QuotaUsage}, {@link QuotaShare}, {@link QuotaPush})
 * and its {@code pb.gubernator} wire form, as the quota peer methods send it.
 */
public final class QuotaProtos {

  private QuotaProtos() {}

  /** Returns the wire form of {@code u}. */
  public static dev.weir.proto.gubernator.QuotaUsage toProto(QuotaUsage u) {
    return dev.weir.proto.gubernator.QuotaUsage.newBuilder()
        .setRule(PeerProtos.toProto(u.rule().withHits(0).withBehavior(0).withCreatedAt(0)))
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
        PeerProtos.fromProto(u.getRule()),
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
