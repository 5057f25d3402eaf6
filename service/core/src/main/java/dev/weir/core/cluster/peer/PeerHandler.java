package dev.weir.core.cluster.peer;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.toplimited.TopLimitedOffException;
import dev.weir.core.toplimited.TopLimitedView;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** What a node does with the calls its peers make to it. */
public interface PeerHandler {

  /**
   * Evaluates {@code requests} as their owner, whatever the ring says (never re-forwards), and returns
   * one answer per request in order.
   */
  List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests);

  /**
   * Answers {@code requests} a peer forwarded to this node, one answer per request in order. By
   * default as their owner ({@link #decideAsOwner}); a member handing keys over hands each item on
   * to the owner its current ring names instead. The future may complete on another thread.
   */
  default CompletableFuture<List<RateLimitResponse>> answerForwarded(
      List<RateLimitRequest> requests) {
    return CompletableFuture.completedFuture(decideAsOwner(requests));
  }

  /** Overwrites this node's copies of GLOBAL buckets with the owner's broadcast. */
  void applyGlobals(List<UpdatePeerGlobal> globals);

  /** Merges buckets handed over by {@code from}; returns how many were stored. */
  int acceptBuckets(List<BucketSnapshot> buckets, String from);

  /**
   * Records that the node at {@code address} is leaving ({@code true}) or back ({@code false});
   * returns at once, with a future that completes once the buckets that moved because of it have
   * been handed over (or the node stopped waiting for them). The caller's thread never waits.
   */
  CompletableFuture<Void> announce(String address, boolean leaving);

  /**
   * Copies to the node at {@code address}, which is about to announce its return, the buckets it
   * will own once back, without changing the ring; returns at once, with a future that completes
   * once the copies were sent (or the node stopped waiting for them). {@code caller} is the remote
   * address of the call that asks (null when the transport reports none): the future fails with a
   * {@link RefusedPeerCall} when {@code address} is one this node would not call otherwise and is
   * not the caller's own ({@link PeerInputValidator#checkCallersOwn}).
   */
  CompletableFuture<Void> prepareReturn(String address, SocketAddress caller);

  /**
   * Takes RLQS usage of quota buckets as their owner, whatever the ring says, in order, and returns
   * each proxy's share, one per usage.
   */
  List<QuotaShare> reportQuota(List<QuotaUsage> usages);

  /**
   * Answers RLQS usage a peer sent to this node as its buckets' owner, one share per usage in
   * order. By default as their owner ({@link #reportQuota}); a member handing keys over hands each
   * usage on to the owner its current ring names instead. The future may complete on another
   * thread.
   */
  default CompletableFuture<List<QuotaShare>> answerQuotaUsage(List<QuotaUsage> usages) {
    return CompletableFuture.completedFuture(reportQuota(usages));
  }

  /** Hands shares an owner pushed to the streams of their proxies here; returns how many arrived. */
  int deliverQuotaShares(List<QuotaPush> pushes);

  /**
   * Returns the keys this node answered over their limit most often in its recent window, what a
   * peer's {@code TopLimited} call asks for.
   *
   * @throws TopLimitedOffException when this node does not count them (the default)
   */
  default TopLimitedView topLimited() {
    throw new TopLimitedOffException();
  }

  /**
   * Returns whether this node serves as a cluster member: it has joined and not left. A node that
   * does not answers a probe (an empty {@code GetPeerRateLimits}) with {@code UNAVAILABLE}, so its
   * peers keep it off their rings until it has its counts back and announced its return.
   */
  default boolean serving() {
    return true;
  }

  /**
   * Sends {@code request}, which a peer that cannot reach its {@code weir_relay_to} target sent
   * through this node, on to that target without its relay field, waiting up to {@code within};
   * completes with the target's answer, or fails with a {@link PeerException} saying why this node
   * cannot reach it (never relaying a relayed call again). By default no call is relayed.
   */
  default CompletableFuture<GetPeerRateLimitsResp> relay(
      GetPeerRateLimitsReq request, Duration within) {
    String target = request.getWeirRelayTo();
    return CompletableFuture.failedFuture(
        new PeerException(target, "this node does not relay calls to '" + target + "'", null));
  }

  /**
   * Sends {@code request}, a bucket transfer a peer that cannot reach its {@code weir_relay_to}
   * target sent through this node, on to that target without its relay field and with its sender
   * ({@code from}) unchanged, waiting up to {@code within}; completes with how many buckets the
   * target accepted, or fails with a {@link PeerException} saying why this node cannot reach it. By
   * default no transfer is relayed.
   */
  default CompletableFuture<Integer> relayTransfer(TransferBucketsReq request, Duration within) {
    String target = request.getWeirRelayTo();
    return CompletableFuture.failedFuture(
        new PeerException(target, "this node does not relay calls to '" + target + "'", null));
  }
}
