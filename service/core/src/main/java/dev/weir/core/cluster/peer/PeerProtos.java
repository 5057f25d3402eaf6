package dev.weir.core.cluster.peer;

import com.google.protobuf.CodedOutputStream;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.FixedWindowSnapshot;
import dev.weir.proto.gubernator.LeakyBucketSnapshot;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.SlidingWindowSnapshot;
import dev.weir.proto.gubernator.TokenBucketSnapshot;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Conversions between the core model and {@code pb.gubernator}'s messages, which Gubernator's public
 * API ({@code V1}) and its peer protocol ({@code PeersV1}) share: the one mapping both front doors
 * and the peers use.
 */
public final class PeerProtos {

  /**
   * The metadata entry that makes a forwarded item's receiver answer it as owner whatever its own
   * ring says: its value is the node that handed the item on (an old owner after a hand-off) or
   * relayed it. The receiver of an item only relayed to it ({@link #relayedOnly}) hands it on
   * after all when it has left its own ring; an item is handed on at most once.
   */
  public static final String HANDED_ON = "weir-handed-on-by";

  /**
   * The metadata entry a relaying node sets on each item it sends on to the item's owner: its value
   * is that node, and an item whose {@link #HANDED_ON} entry is the same node was only relayed, not
   * handed on by an old owner.
   */
  public static final String RELAYED = "weir-relayed-by";

  /**
   * The metadata entry a node sets on the GLOBAL hits it queued and sends to their owner: its value
   * is that node, whose copy of the bucket already holds those hits (it answered from the copy when
   * it queued them). When the hits come back to that node (the owner it sent them to handed them on
   * to it, its ring being ahead) they are not applied again.
   */
  public static final String QUEUED_BY = "weir-queued-by";

  /**
   * The most bytes of metadata a forwarded item carries. The owner reads only the {@code time_zone}
   * entry of a Gregorian request (Gubernator peers use metadata for trace context, far smaller),
   * which is sent alone when the whole metadata is over this bound; the bound keeps a batch of
   * items from many callers under the peer message limit (64 MiB, of which 1000 items with the
   * longest names and keys allowed take 17 MB), so that no caller's metadata can make the owner
   * refuse every item of a batch.
   */
  public static final int MAX_FORWARDED_METADATA_BYTES = 512;

  /** The longest {@code time_zone} metadata value forwarded alone (zone ids are under 40). */
  static final int MAX_FORWARDED_TIME_ZONE_CHARS = 64;

  /**
   * The metadata entry holding a forwarded item's W3C trace context, forwarded alone (when at most
   * {@link #MAX_FORWARDED_TIME_ZONE_CHARS} long; a {@code traceparent} takes 55) with {@code
   * time_zone} when the whole metadata is over {@link #MAX_FORWARDED_METADATA_BYTES}.
   */
  public static final String TRACEPARENT = "traceparent";

  private PeerProtos() {}

  /**
   * Returns the wire form of {@code r}; {@code created_at} is sent when set, the metadata when it
   * takes at most {@link #MAX_FORWARDED_METADATA_BYTES}, else only its {@code time_zone} entry,
   * which decides a Gregorian window, and its {@link #TRACEPARENT} (each when at most {@link
   * #MAX_FORWARDED_TIME_ZONE_CHARS} long).
   */
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
            .setBurst(r.burst());
    b.putAllMetadata(forwardedMetadata(r.metadata()));
    if (r.createdAt() != 0) {
      b.setCreatedAt(r.createdAt());
    }
    return b.build();
  }

  /**
   * Returns what of {@code metadata} a forwarded item carries: all of it when it takes at most
   * {@link #MAX_FORWARDED_METADATA_BYTES}, else only its {@code time_zone} and {@link #TRACEPARENT}
   * entries, each when at most {@link #MAX_FORWARDED_TIME_ZONE_CHARS} long, and its {@link
   * #HANDED_ON}, {@link #RELAYED} and {@link #QUEUED_BY} entries (a node's address, which a node
   * sets and a caller's item never keeps: the front door removes them).
   */
  public static Map<String, String> forwardedMetadata(Map<String, String> metadata) {
    if (metadata.isEmpty() || metadataBytes(metadata) <= MAX_FORWARDED_METADATA_BYTES) {
      return metadata;
    }
    Map<String, String> kept = new LinkedHashMap<>(4);
    keepShort(kept, metadata, GregorianInterval.TIME_ZONE_METADATA);
    keepShort(kept, metadata, TRACEPARENT);
    String handedOn = metadata.get(HANDED_ON);
    if (handedOn != null) {
      kept.put(HANDED_ON, handedOn);
    }
    String relayed = metadata.get(RELAYED);
    if (relayed != null) {
      kept.put(RELAYED, relayed);
    }
    String queued = metadata.get(QUEUED_BY);
    if (queued != null) {
      kept.put(QUEUED_BY, queued);
    }
    return kept;
  }

  /**
   * Returns whether {@code metadata} is an item's that a peer relayed to its owner without any old
   * owner having handed it on: its {@link #HANDED_ON} and {@link #RELAYED} entries name the same
   * node.
   */
  public static boolean relayedOnly(Map<String, String> metadata) {
    String relayed = metadata.get(RELAYED);
    return relayed != null && relayed.equals(metadata.get(HANDED_ON));
  }

  private static void keepShort(Map<String, String> kept, Map<String, String> metadata, String key) {
    String value = metadata.get(key);
    if (value != null && value.length() <= MAX_FORWARDED_TIME_ZONE_CHARS) {
      kept.put(key, value);
    }
  }

  /** Returns the UTF-8 bytes of the keys and values of {@code metadata}, with their lengths. */
  private static long metadataBytes(Map<String, String> metadata) {
    long bytes = 0;
    for (Map.Entry<String, String> e : metadata.entrySet()) {
      bytes +=
          CodedOutputStream.computeStringSizeNoTag(e.getKey())
              + CodedOutputStream.computeStringSizeNoTag(e.getValue());
    }
    return bytes;
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
        r.getMetadataCount() == 0 ? Map.of() : r.getMetadataMap());
  }

  /** Returns the wire form of {@code r}; an empty error and empty metadata are not written. */
  public static RateLimitResp toProto(RateLimitResponse r) {
    RateLimitResp.Builder b =
        RateLimitResp.newBuilder()
            .setStatus(toProto(r.status()))
            .setLimit(r.limit())
            .setRemaining(r.remaining())
            .setResetTime(r.resetTime());
    if (r.isError()) {
      b.setError(r.error());
    }
    if (!r.metadata().isEmpty()) {
      b.putAllMetadata(r.metadata());
    }
    return b.build();
  }

  /** Returns the model form of {@code r}. */
  public static RateLimitResponse fromProto(RateLimitResp r) {
    return new RateLimitResponse(
        statusOf(r.getStatusValue()),
        r.getLimit(),
        r.getRemaining(),
        r.getResetTime(),
        r.getError(),
        r.getMetadataMap());
  }

  /** Returns the wire status of {@code status}, matched by name. */
  public static dev.weir.proto.gubernator.Status toProto(Status status) {
    return status == Status.OVER_LIMIT
        ? dev.weir.proto.gubernator.Status.OVER_LIMIT
        : dev.weir.proto.gubernator.Status.UNDER_LIMIT;
  }

  /**
   * Returns the model status of the wire status number {@code value}: {@code OVER_LIMIT} for its
   * number, {@code UNDER_LIMIT} for any other (the peer validator refuses numbers it does not
   * know).
   */
  public static Status statusOf(int value) {
    return value == dev.weir.proto.gubernator.Status.OVER_LIMIT_VALUE
        ? Status.OVER_LIMIT
        : Status.UNDER_LIMIT;
  }

  /** Returns the snapshot of {@code state} under {@code key}. */
  public static BucketSnapshot toSnapshot(String key, BucketState state) {
    BucketSnapshot.Builder b = BucketSnapshot.newBuilder().setKey(key);
    if (state instanceof TokenBucketState t) {
      b.setTokenBucket(
          TokenBucketSnapshot.newBuilder()
              .setStatus(toProto(t.status()))
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
                statusOf(t.getStatusValue()),
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
}
