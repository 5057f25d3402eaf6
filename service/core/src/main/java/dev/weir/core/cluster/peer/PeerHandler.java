package dev.weir.core.cluster.peer;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import java.util.List;

/** What a node does with the calls its peers make to it. */
public interface PeerHandler {

  /**
   * Evaluates {@code requests} as their owner, whatever the ring says (never re-forwards), and returns
   * one answer per request in order.
   */
  List<RateLimitResponse> checkAsOwner(List<RateLimitRequest> requests);

  /** Overwrites this node's copies of GLOBAL buckets with the owner's broadcast. */
  void applyGlobals(List<UpdatePeerGlobal> globals);

  /** Merges buckets handed over by {@code from}; returns how many were stored. */
  int acceptBuckets(List<BucketSnapshot> buckets, String from);

  /** Records that the node at {@code address} is leaving ({@code true}) or back ({@code false}). */
  void announce(String address, boolean leaving);

  /**
   * Copies to the node at {@code address}, which is about to announce its return, the buckets it will
   * own once back, without changing the ring; returns once the copies were sent.
   */
  void prepareReturn(String address);

  /**
   * Returns whether this node serves as a cluster member: it has joined and not left. A node that
   * does not answers a probe (an empty {@code GetPeerRateLimits}) with {@code UNAVAILABLE}, so its
   * peers keep it off their rings until it has its counts back and announced its return.
   */
  default boolean serving() {
    return true;
  }
}
