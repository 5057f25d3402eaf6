package dev.weir.envoy.rlqs;

import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import java.util.concurrent.CompletableFuture;

/** Where the RLQS service sends bucket usage: to the owner of each bucket's counter. */
@FunctionalInterface
public interface QuotaReports {

  /**
   * Sends {@code usage} to its bucket's owner; completes with the proxy's share (an error share
   * when the owner cannot answer). Never blocks.
   */
  CompletableFuture<QuotaShare> report(QuotaUsage usage);
}
