package dev.weir.core.cluster;

import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerException;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.model.RateLimitRequest;
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
import org.slf4j.Logger;
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
 *
 * <p>Usage a peer sent to this node as its bucket's owner is answered by {@link #answer}: a usage
 * whose key this node's ring gives to another peer (the sender's ring is behind: the bucket moved
 * away by hand-off) is handed on to that owner, once, so that every proxy's usage is counted and
 * shared by the one owner that holds the bucket's count.
 */
public final class QuotaRouter implements QuotaPushSink {

  private static final Logger LOG = LoggerFactory.getLogger(QuotaRouter.class);

  /**
   * The metadata entry of a usage's rule that marks a usage an old owner handed on: its value is
   * that node. Its receiver answers the usage whatever its own ring says.
   */
  public static final String HANDED_ON = PeerProtos.HANDED_ON;

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
   * Creates the router of node {@code self}; its owner is set with {@link #ownedBy}; each push call
   * has deadline {@code timeout}, and each usage call handing usage on half of it (shorter than the
   * deadline of the sender's call).
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

  /**
   * Returns the shares answering {@code usages}, which a peer sent to this node as their buckets'
   * owner, one per usage in order; already complete when every usage was answered here.
   *
   * <p>Design: a usage whose key this node's ring gives to another peer is handed on to that owner,
   * the usages of one call in one call per owner, each marked {@link #HANDED_ON} so that its
   * receiver counts it whatever its own ring says (two nodes whose rings disagree about a key do
   * not pass it back and forth; a node that does not know the mark never hands usage on). Handing
   * on rather than answering with an error keeps the counts exact: the sender's ring still names
   * this node, so it would send the usage here again, and the requests the proxy reported would be
   * counted nowhere. A usage whose hand-on most likely reached no one (refused or cancelled before
   * it was sent, or failed {@code UNAVAILABLE}: that owner is down) is answered here after all, as
   * before the move: the sender may have routed it here because it found that owner down. A usage
   * whose hand-on failed otherwise (no answer within the deadline, a lost answer) may have been
   * counted by that owner: it is answered with an error share and not counted here, so that no
   * usage is counted twice.
   * Usage marked {@link #HANDED_ON}, and every usage while the ring is empty, is answered here.
   */
  public CompletableFuture<List<QuotaShare>> answer(List<QuotaUsage> usages) {
    HashRing current = ring.get();
    Map<String, List<Integer>> moved = new LinkedHashMap<>();
    List<QuotaUsage> here = new ArrayList<>(usages.size());
    List<Integer> hereAt = new ArrayList<>(usages.size());
    for (int i = 0; i < usages.size(); i++) {
      QuotaUsage usage = usages.get(i);
      String to = movedTo(current, usage);
      if (to == null) {
        here.add(unmarked(usage));
        hereAt.add(i);
      } else {
        moved.computeIfAbsent(to, o -> new ArrayList<>()).add(i);
      }
    }
    if (moved.isEmpty()) {
      return CompletableFuture.completedFuture(owner.report(here));
    }
    QuotaShare[] shares = new QuotaShare[usages.size()];
    if (!here.isEmpty()) {
      fill(hereAt, owner.report(here), shares);
    }
    List<CompletableFuture<Void>> calls = new ArrayList<>(moved.size());
    moved.forEach((to, indexes) -> calls.add(handOn(to, indexes, usages, shares)));
    return CompletableFuture.allOf(calls.toArray(new CompletableFuture<?>[0]))
        .thenApply(v -> List.of(shares));
  }

  // The owner usage goes to, or null when this node answers it.
  private String movedTo(HashRing current, QuotaUsage usage) {
    if (current.isEmpty() || usage.rule().metadata().containsKey(HANDED_ON)) {
      return null;
    }
    String to = current.ownerOf(usage.key());
    return to.equals(self) ? null : to;
  }

  /**
   * Sends the usages at {@code indexes} to their owner {@code to}, filling in their shares in {@code
   * out}; never fails. When the call most likely reached no peer ({@link
   * PeerClientPool#likelyUndelivered}) the usages are answered here; when it failed otherwise, or
   * answered with too few shares, {@code to} may have counted them, so they are not counted here and
   * each gets an error share, with which the stream's node keeps the proxy's last share ({@code
   * StreamCounter#accept}). {@link QuotaOwner#report} is thread-safe and never blocks, so it runs on
   * the thread that completes the call.
   */
  private CompletableFuture<Void> handOn(
      String to, List<Integer> indexes, List<QuotaUsage> usages, QuotaShare[] out) {
    List<QuotaUsage> marked = new ArrayList<>(indexes.size());
    indexes.forEach(i -> marked.add(marked(usages.get(i))));
    inFlight.incrementAndGet();
    return peers
        .call(to, c -> c.reportQuotaUsage(marked, timeout.dividedBy(2)))
        .handle(
            (answers, error) -> {
              inFlight.decrementAndGet();
              if (error == null && answers.size() == indexes.size()) {
                fill(indexes, answers, out);
                return null;
              }
              if (error != null && PeerClientPool.likelyUndelivered(error)) {
                LOG.debug(
                    "handing {} quota usages on to {} reached no peer, answered here: {}",
                    marked.size(),
                    to,
                    error.getMessage());
                List<QuotaUsage> original = new ArrayList<>(indexes.size());
                indexes.forEach(i -> original.add(unmarked(usages.get(i))));
                fill(indexes, owner.report(original), out);
                return null;
              }
              String why =
                  error == null
                      ? "peer '" + to + "' answered " + answers.size() + " shares to "
                          + indexes.size() + " usages"
                      : message(to, error);
              warnings.warn(
                  "hand-on " + to,
                  "not counting {} quota usages handed on to {}, which may have counted them: {}",
                  marked.size(),
                  to,
                  why);
              QuotaShare failed =
                  QuotaShare.error(
                      "handing the quota usage on to its owner '"
                          + to
                          + "' failed and it may have counted it, so it was not counted here: "
                          + why);
              indexes.forEach(i -> out[i] = failed);
              return null;
            });
  }

  /** Puts {@code shares}, in order, at the positions {@code at} of {@code out}. */
  private static void fill(List<Integer> at, List<QuotaShare> shares, QuotaShare[] out) {
    for (int j = 0; j < at.size(); j++) {
      out[at.get(j)] = shares.get(j);
    }
  }

  private QuotaUsage marked(QuotaUsage usage) {
    Map<String, String> metadata = new LinkedHashMap<>(usage.rule().metadata());
    metadata.put(HANDED_ON, self);
    return withRule(usage, usage.rule().withMetadata(metadata));
  }

  private static QuotaUsage unmarked(QuotaUsage usage) {
    Map<String, String> metadata = usage.rule().metadata();
    if (!metadata.containsKey(HANDED_ON)) {
      return usage;
    }
    Map<String, String> kept = new LinkedHashMap<>(metadata);
    kept.remove(HANDED_ON);
    return withRule(usage, usage.rule().withMetadata(kept));
  }

  private static QuotaUsage withRule(QuotaUsage u, RateLimitRequest rule) {
    return new QuotaUsage(
        rule,
        u.client(),
        u.allowed(),
        u.denied(),
        u.elapsedMillis(),
        u.intervalMillis(),
        u.released());
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
