package dev.weir.core.cluster;

import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerException;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.quota.QuotaClients;
import dev.weir.core.quota.QuotaOwner;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaPushSink;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaShareReceiver;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.time.Clock;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.LoggerFactory;

/**
 * The cluster's quota path: sends each proxy's usage of a bucket to the bucket's owner (this node's
 * {@link QuotaOwner}, or a peer through its batching client) and returns the proxy's share, and
 * carries the shares owners push to the node of each proxy's stream (here: the registered {@link
 * QuotaShareReceiver}; elsewhere: {@code PushQuotaShares}).
 *
 * <p>Design: a usage reads the ring once; when the call to its owner fails and the ring now names
 * another owner, it is sent again, up to {@link ClusterRateLimitService#MAX_ATTEMPTS} times, as
 * forwarded checks are. Pushes are grouped by node, at most {@value
 * RateLimitService#MAX_BATCH_SIZE} per call, and never retried: the
 * proxy's next report brings a fresh share. A usage this node owns is answered on the calling
 * thread, as is one while the ring is empty (this node left and every other member is down).
 */
public final class QuotaRouter implements QuotaPushSink {

  private static final int CHUNK = RateLimitService.MAX_BATCH_SIZE;

  private final String self;
  private final Supplier<HashRing> ring;
  private final PeerClientPool peers;
  private final Duration timeout;
  private final RateLimitedLogger warnings;
  private final AtomicInteger inFlight = new AtomicInteger();
  private volatile QuotaOwner owner;
  private volatile QuotaShareReceiver receiver = pushes -> 0;

  /**
   * Creates the router of node {@code self}; its owner is set with {@link #ownedBy}, and each push
   * call has deadline {@code timeout}.
   */
  public QuotaRouter(
      String self, Supplier<HashRing> ring, PeerClientPool peers, Duration timeout, Clock clock) {
    this.self = self;
    this.ring = ring;
    this.peers = peers;
    this.timeout = timeout;
    this.warnings =
        new RateLimitedLogger(
            LoggerFactory.getLogger(QuotaRouter.class), clock, Duration.ofSeconds(10));
  }

  /** Sets this node's owner side, which answers the usage of buckets this node owns. */
  void ownedBy(QuotaOwner quotaOwner) {
    this.owner = quotaOwner;
  }

  /** Sets where shares pushed to proxies connected to this node go. */
  public void receiveWith(QuotaShareReceiver value) {
    this.receiver = value;
  }

  /** Returns the number of peer calls (usage batches and pushes) not yet answered. */
  public int inFlight() {
    return inFlight.get();
  }

  /**
   * Sends {@code usage} to its bucket's owner and completes with the proxy's share, or with an
   * error share naming the owner when it cannot be reached.
   */
  public CompletableFuture<QuotaShare> report(QuotaUsage usage) {
    return route(usage, 1);
  }

  private CompletableFuture<QuotaShare> route(QuotaUsage usage, int attempt) {
    HashRing current = ring.get();
    String ownerAddress = current.isEmpty() ? self : current.ownerOf(usage.key());
    if (ownerAddress.equals(self)) {
      return CompletableFuture.completedFuture(owner.report(List.of(usage)).get(0));
    }
    inFlight.incrementAndGet();
    return peers
        .call(ownerAddress, c -> c.reportQuota(usage))
        .handle(
            (share, error) -> {
              inFlight.decrementAndGet();
              if (error == null) {
                return CompletableFuture.completedFuture(share);
              }
              HashRing now = ring.get();
              String nowOwner = now.isEmpty() ? ownerAddress : now.ownerOf(usage.key());
              if (!nowOwner.equals(ownerAddress)
                  && attempt < ClusterRateLimitService.MAX_ATTEMPTS) {
                return route(usage, attempt + 1);
              }
              return CompletableFuture.completedFuture(
                  QuotaShare.error(message(ownerAddress, error)));
            })
        .thenCompose(f -> f);
  }

  /** Hands shares pushed to this node to its streams; returns how many reached one. */
  public int deliver(List<QuotaPush> pushes) {
    return receiver.deliver(pushes);
  }

  /** Sends {@code pushes} to the nodes of their clients' streams; never blocks. */
  @Override
  public void send(List<QuotaPush> pushes) {
    Map<String, List<QuotaPush>> byNode = new LinkedHashMap<>();
    for (QuotaPush p : pushes) {
      byNode.computeIfAbsent(QuotaClients.nodeOf(p.client()), n -> new ArrayList<>()).add(p);
    }
    HashRing current = ring.get();
    byNode.forEach(
        (node, list) -> {
          if (node.equals(self)) {
            deliver(list);
          } else if (current.contains(node)) {
            for (int from = 0; from < list.size(); from += CHUNK) {
              List<QuotaPush> chunk = list.subList(from, Math.min(list.size(), from + CHUNK));
              inFlight.incrementAndGet();
              peers
                  .call(node, c -> c.pushQuotaShares(chunk, timeout))
                  .whenComplete(
                      (delivered, error) -> {
                        inFlight.decrementAndGet();
                        if (error != null) {
                          warnings.warn("push", "{}", message(node, error));
                        }
                      });
            }
          }
        });
  }

  private static String message(String peer, Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof PeerException) {
        return t.getMessage();
      }
    }
    return "error while calling peer '" + peer + "': " + error;
  }
}
