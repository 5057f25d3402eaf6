package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.PushQuotaSharesReq;
import dev.weir.proto.gubernator.QuotaPush;
import dev.weir.proto.gubernator.QuotaShare;
import dev.weir.proto.gubernator.QuotaUsage;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.ReportQuotaUsageReq;
import dev.weir.proto.gubernator.SlidingWindowSnapshot;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.proto.gubernator.UpdatePeerGlobalsReq;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Pins {@link InputLimits#LONGEST_NAME_OR_KEY} against {@link PeerSecurity#MAX_MESSAGE_BYTES}: a
 * call between nodes of {@value RateLimitService#MAX_BATCH_SIZE} items (a forwarded batch, a GLOBAL
 * chunk, a hand-off chunk, a quota report) with the longest names and keys allowed, every number at
 * its longest encoding and the most metadata forwarded takes at most three quarters of the cap.
 */
class PeerMessageSizeTest {

  private static final int ITEMS = RateLimitService.MAX_BATCH_SIZE;
  private static final int MOST = PeerSecurity.MAX_MESSAGE_BYTES / 4 * 3;
  private static final String NAME = "n".repeat(InputLimits.LONGEST_NAME_OR_KEY);
  private static final String KEY = "k".repeat(InputLimits.LONGEST_NAME_OR_KEY);
  private static final String HASH_KEY = NAME + "_" + KEY;
  private static final String ADDRESS = "a".repeat(253) + ":65535";

  @Test
  void forwardedBatch_ofTheLongestItems_fitsThePeerCap() {
    for (Map<String, String> metadata : List.of(manySmallEntries(), longEntries())) {
      List<RateLimitRequest> items = Collections.nCopies(ITEMS, longestItem(metadata));

      int streamed = ForwardCodec.encode(new ForwardCodec.Batch(Long.MIN_VALUE, items)).length;
      int unary =
          GetPeerRateLimitsReq.newBuilder()
              .addAllRequests(items.stream().map(PeerProtos::toProto).toList())
              .setWeirRelayTo(ADDRESS)
              .build()
              .getSerializedSize();

      assertThat(streamed).as("ForwardBatch").isLessThanOrEqualTo(MOST);
      assertThat(unary).as("GetPeerRateLimitsReq").isLessThanOrEqualTo(MOST);
    }
  }

  @Test
  void globalBroadcastChunk_ofTheLongestKeys_fitsThePeerCap() {
    UpdatePeerGlobal update =
        UpdatePeerGlobal.newBuilder()
            .setKey(HASH_KEY)
            .setStatus(
                PeerProtos.toProto(
                    new RateLimitResponse(
                        Status.OVER_LIMIT,
                        Long.MIN_VALUE,
                        Long.MIN_VALUE,
                        Long.MIN_VALUE,
                        "e".repeat(1024),
                        Map.of("owner", ADDRESS))))
            .setAlgorithmValue(-1)
            .setDuration(Long.MIN_VALUE)
            .setCreatedAt(Long.MIN_VALUE)
            .setWeirState(longestSnapshot())
            .build();

    int size =
        UpdatePeerGlobalsReq.newBuilder()
            .addAllGlobals(Collections.nCopies(ITEMS, update))
            .build()
            .getSerializedSize();

    assertThat(size).isLessThanOrEqualTo(MOST);
  }

  @Test
  void handOffChunk_ofTheLongestKeys_fitsThePeerCap() {
    int size =
        TransferBucketsReq.newBuilder()
            .addAllBuckets(Collections.nCopies(ITEMS, longestSnapshot()))
            .setFrom(ADDRESS)
            .setWeirRelayTo(ADDRESS)
            .build()
            .getSerializedSize();

    assertThat(size).isLessThanOrEqualTo(MOST);
  }

  @Test
  void quotaCalls_ofTheLongestKeys_fitThePeerCap() {
    RateLimitReq rule = PeerProtos.toProto(longestItem(manySmallEntries()));
    QuotaUsage usage =
        QuotaUsage.newBuilder()
            .setRule(rule)
            .setClient("c".repeat(1024) + ADDRESS + "/" + Long.MIN_VALUE)
            .setAllowed(Long.MIN_VALUE)
            .setDenied(Long.MIN_VALUE)
            .setElapsedMs(Long.MIN_VALUE)
            .setIntervalMs(Long.MIN_VALUE)
            .setReleased(true)
            .build();
    QuotaPush push =
        QuotaPush.newBuilder()
            .setKey(HASH_KEY)
            .setClient(usage.getClient())
            .setShare(
                QuotaShare.newBuilder()
                    .setMillirequestsPerSecond(Long.MIN_VALUE)
                    .setBurst(Long.MIN_VALUE)
                    .setSpentUntil(Long.MIN_VALUE)
                    .setEpoch(Long.MIN_VALUE)
                    .setSequence(Long.MIN_VALUE)
                    .setError("e".repeat(1024)))
            .build();

    int report =
        ReportQuotaUsageReq.newBuilder()
            .addAllUsages(Collections.nCopies(ITEMS, usage))
            .build()
            .getSerializedSize();
    int pushes =
        PushQuotaSharesReq.newBuilder()
            .addAllPushes(Collections.nCopies(ITEMS, push))
            .build()
            .getSerializedSize();

    assertThat(report).as("ReportQuotaUsageReq").isLessThanOrEqualTo(MOST);
    assertThat(pushes).as("PushQuotaSharesReq").isLessThanOrEqualTo(MOST);
  }

  private static RateLimitRequest longestItem(Map<String, String> metadata) {
    return RateLimitRequest.builder(NAME, KEY)
        .hits(Long.MIN_VALUE)
        .limit(Long.MIN_VALUE)
        .duration(Long.MIN_VALUE)
        .algorithmNumber(-1)
        .behavior(-1)
        .burst(Long.MIN_VALUE)
        .createdAt(Long.MIN_VALUE)
        .metadata(metadata)
        .build();
  }

  private static BucketSnapshot longestSnapshot() {
    return BucketSnapshot.newBuilder()
        .setKey(HASH_KEY)
        .setSlidingWindow(
            SlidingWindowSnapshot.newBuilder()
                .setLimit(Long.MIN_VALUE)
                .setDuration(Long.MIN_VALUE)
                .setWindowStart(Long.MIN_VALUE)
                .setPreviousCount(Long.MIN_VALUE)
                .setCurrentCount(Long.MIN_VALUE)
                .setExpireAt(Long.MIN_VALUE))
        .build();
  }

  /** Metadata just within the forwarded bound in the most entries, each costing the most framing. */
  private static Map<String, String> manySmallEntries() {
    Map<String, String> metadata = new LinkedHashMap<>();
    for (int i = 0; metadata.size() < PeerProtos.MAX_FORWARDED_METADATA_BYTES / 4; i++) {
      metadata.put(String.format("%02x", i), "");
    }
    assertThat(PeerProtos.forwardedMetadata(metadata)).isEqualTo(metadata);
    return metadata;
  }

  /** Metadata over the forwarded bound, keeping the longest entries a forwarded item may carry. */
  private static Map<String, String> longEntries() {
    Map<String, String> metadata = new LinkedHashMap<>();
    metadata.put(GregorianInterval.TIME_ZONE_METADATA, "z".repeat(64));
    metadata.put(PeerProtos.TRACEPARENT, "t".repeat(64));
    metadata.put(PeerProtos.HANDED_ON, ADDRESS);
    metadata.put(PeerProtos.RELAYED, ADDRESS);
    metadata.put(PeerProtos.QUEUED_BY, ADDRESS);
    assertThat(PeerProtos.forwardedMetadata(metadata)).isEqualTo(metadata);
    return metadata;
  }
}
