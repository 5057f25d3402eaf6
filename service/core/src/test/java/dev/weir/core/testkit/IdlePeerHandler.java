package dev.weir.core.testkit;

import dev.weir.core.cluster.peer.PeerHandler;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import java.net.SocketAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A {@link PeerHandler} that does nothing with its peers' calls: it answers no request, stores no
 * bucket and no quota, and completes every announcement at once. A test extends it and overrides
 * the calls it watches.
 */
public class IdlePeerHandler implements PeerHandler {

  @Override
  public List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests) {
    return List.of();
  }

  @Override
  public void applyGlobals(List<UpdatePeerGlobal> globals) {}

  @Override
  public int acceptBuckets(List<BucketSnapshot> buckets, String from) {
    return 0;
  }

  @Override
  public CompletableFuture<Void> announce(String address, boolean leaving) {
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public CompletableFuture<Void> prepareReturn(String address, SocketAddress caller) {
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public List<QuotaShare> reportQuota(List<QuotaUsage> usages) {
    return List.of();
  }

  @Override
  public int deliverQuotaShares(List<QuotaPush> pushes) {
    return 0;
  }
}
