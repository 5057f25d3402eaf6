package dev.weir.core.cluster.peer;

import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.TransferBucketsReq;
import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * The relaying side of {@code weir_relay_to}: sends a call a peer could not make itself on to its
 * target, directly (a relayed call is never relayed again, so no call goes round in circles), when
 * the target is a member this node finds up, or a peer that announced its leave within the last
 * batch timeout and still drains (the grace this node gives its own forwards to a leaver before
 * taking it down). Forwarded items ({@code GetPeerRateLimits}) and bucket
 * transfers ({@code TransferBuckets}) are relayed alike; a transfer keeps its sender's {@code
 * from}, so the target merges it as the original sender's (once per sender and snapshot, whatever
 * path it took). A relay refused before anything was sent on fails with {@link UnsentRelay}, marked
 * as {@linkplain UnsentRelay#TARGET_LEFT target left} when the target announced its leave longer
 * ago than the grace.
 *
 * <p>Each relayed item carries {@link PeerProtos#RELAYED} (this node) and, unless an old owner
 * handed it on already, {@link PeerProtos#HANDED_ON} (this node too), so that its target answers
 * it as owner whatever its own ring says, unless the target has left its own ring: then it hands
 * the item on, once, to the key's next owner ({@link PeerProtos#relayedOnly}).
 *
 * <p>An indirect probe (a relay without items) of a target within its grace is answered OK when
 * the target answers that it is not serving, as a leaver does from its leave notice on while it
 * still drains: the leaver stays vouched for until its grace ends. Any other failure (the leaver's
 * listener closed) fails the probe as it fails any relay.
 */
public final class PeerRelay {

  private final String self;
  private final PeerClientPool pool;
  private final Supplier<? extends Collection<String>> members;
  private final Predicate<String> draining;
  private final Predicate<String> leaving;
  private final Duration grace;

  /**
   * Creates the relay of node {@code self}, calling {@code members} through {@code pool}, and the
   * peers for which {@code draining} holds: those that announced their leave less than {@code
   * grace} ago; a relay to a peer for which only {@code leaving} holds (it announced its leave
   * earlier) is refused as such.
   */
  public PeerRelay(
      String self,
      PeerClientPool pool,
      Supplier<? extends Collection<String>> members,
      Predicate<String> draining,
      Predicate<String> leaving,
      Duration grace) {
    this.self = self;
    this.pool = pool;
    this.members = members;
    this.draining = draining;
    this.leaving = leaving;
    this.grace = grace;
  }

  /** See {@link PeerHandler#relay}. */
  public CompletableFuture<GetPeerRateLimitsResp> relay(
      GetPeerRateLimitsReq request, Duration within) {
    String target = request.getWeirRelayTo();
    UnsentRelay refusal = refusal(target);
    if (refusal != null) {
      return CompletableFuture.failedFuture(refusal);
    }
    GetPeerRateLimitsReq.Builder onward = request.toBuilder().clearWeirRelayTo();
    for (RateLimitReq.Builder item : onward.getRequestsBuilderList()) {
      if (!item.containsMetadata(PeerProtos.HANDED_ON)) {
        item.putMetadata(PeerProtos.HANDED_ON, self);
      }
      item.putMetadata(PeerProtos.RELAYED, self);
    }
    CompletableFuture<GetPeerRateLimitsResp> sent =
        pool.call(target, c -> c.relayOnward(onward.build(), within));
    if (request.getRequestsCount() > 0 || !draining.test(target)) {
      return sent;
    }
    return sent.exceptionallyCompose(
        error ->
            PeerClient.notServing(error)
                ? CompletableFuture.completedFuture(GetPeerRateLimitsResp.getDefaultInstance())
                : CompletableFuture.failedFuture(error));
  }

  /** See {@link PeerHandler#relayTransfer}. */
  public CompletableFuture<Integer> relayTransfer(TransferBucketsReq request, Duration within) {
    String target = request.getWeirRelayTo();
    UnsentRelay refusal = refusal(target);
    if (refusal != null) {
      return CompletableFuture.failedFuture(refusal);
    }
    TransferBucketsReq onward = request.toBuilder().clearWeirRelayTo().build();
    return pool.call(target, c -> c.transferOnward(onward, within));
  }

  // Why this node does not relay to target, or null when it does.
  private UnsentRelay refusal(String target) {
    String refusal = null;
    boolean left = false;
    if (target.equals(self)) {
      refusal = "field 'weir_relay_to' names this node (" + self + "); call it directly";
    } else if (!members.get().contains(target) && !draining.test(target)) {
      left = leaving.test(target);
      refusal =
          left
              ? "field 'weir_relay_to' ("
                  + target
                  + ") names a peer that announced it is leaving more than WEIR_BATCH_TIMEOUT ("
                  + grace.toMillis()
                  + " ms) ago: relays go only to members and to a peer that announced its leave"
                  + " within the last WEIR_BATCH_TIMEOUT"
              : "field 'weir_relay_to' (" + target + ") is not a member of this node's cluster";
    } else if (pool.liveness().isDown(target)) {
      refusal =
          "peer '"
              + self
              + "' does not reach '"
              + target
              + "' either: "
              + pool.liveness().downReason(target);
    }
    return refusal == null ? null : new UnsentRelay(refusal, left);
  }
}
