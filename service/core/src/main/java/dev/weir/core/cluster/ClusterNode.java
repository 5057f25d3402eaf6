package dev.weir.core.cluster;

import dev.weir.core.cluster.batch.Scheduler;
import dev.weir.core.cluster.global.GlobalManager;
import dev.weir.core.cluster.handoff.HandOff;
import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerHandler;
import dev.weir.core.cluster.ring.HashRing;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.quota.QuotaOwner;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One cluster member: the ring, the peer clients, the GLOBAL queues, hand-off and the request path,
 * wired together over this node's store. The composition root serves it (as a {@link PeerHandler})
 * on the peer listener, hands {@link #service()} to the front doors and feeds discovery's peer sets
 * to {@link #membership()}.
 */
public final class ClusterNode implements PeerHandler, AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(ClusterNode.class);

  /**
   * How long another peer stays off this node's ring after it announced it is leaving, unless it
   * announces its return sooner: a bound, so a missed return notice heals by itself.
   */
  public static final Duration DEPARTED_TTL = Duration.ofSeconds(30);

  /** The longest wait between two attempts to announce this node's return to a peer. */
  public static final Duration MAX_ANNOUNCE_BACKOFF = Duration.ofSeconds(5);

  private final String self;
  private final ClusterSettings settings;
  private final Scheduler scheduler;
  private final Membership membership;
  private final PeerClientPool peers;
  private final GlobalManager global;
  private final HandOff handOff;
  private final ClusterRateLimitService service;
  private final QuotaRouter quota;
  private final QuotaOwner quotaOwner;
  private volatile boolean closed;

  /**
   * Creates the member {@code self} (its advertised gRPC address).
   *
   * @param self this node's advertised gRPC address
   * @param settings the cluster settings
   * @param store this node's buckets
   * @param local evaluates requests against {@code store}
   * @param scheduler runs batching and GLOBAL timers
   * @param clock the time
   * @param discovery reports degraded membership in health (may be null)
   */
  public ClusterNode(
      String self,
      ClusterSettings settings,
      BucketStore store,
      LocalCheck local,
      Scheduler scheduler,
      Clock clock,
      PeerDiscovery discovery) {
    this(
        self,
        settings,
        store,
        local,
        scheduler,
        clock,
        discovery,
        address -> Grpc.newChannelBuilder(address, InsecureChannelCredentials.create()).build());
  }

  /**
   * Creates the member {@code self} as above, calling each peer (by its advertised address) over
   * the channel {@code peerChannels} opens to it: to its peer listener, with this node's
   * credentials.
   */
  public ClusterNode(
      String self,
      ClusterSettings settings,
      BucketStore store,
      LocalCheck local,
      Scheduler scheduler,
      Clock clock,
      PeerDiscovery discovery,
      Function<String, ManagedChannel> peerChannels) {
    this(self, settings, store, local, scheduler, clock, discovery, peerChannels, scheduler);
  }

  /**
   * Creates the member {@code self} as above, timing the ends of spent quota windows on {@code
   * quotaTimers} (tests drive them with a fake scheduler).
   */
  public ClusterNode(
      String self,
      ClusterSettings settings,
      BucketStore store,
      LocalCheck local,
      Scheduler scheduler,
      Clock clock,
      PeerDiscovery discovery,
      Function<String, ManagedChannel> peerChannels,
      Scheduler quotaTimers) {
    this.self = self;
    this.settings = settings;
    this.scheduler = scheduler;
    this.membership =
        new Membership(
            HashRing.of(List.of(), settings.replicas(), settings.hash()),
            self,
            clock,
            scheduler,
            DEPARTED_TTL);
    this.peers =
        new PeerClientPool(
            address ->
                new PeerClient(
                    address,
                    peerChannels.apply(address),
                    settings.peerClientSettings(),
                    scheduler,
                    clock));
    this.global =
        new GlobalManager(
            self,
            membership::ring,
            peers,
            local,
            store,
            scheduler,
            clock,
            settings.globalSyncWait(),
            settings.globalBatchLimit(),
            settings.globalTimeout());
    this.handOff = new HandOff(self, store, peers, clock, handOffWait());
    this.service =
        new ClusterRateLimitService(self, membership::ring, local, peers, global, clock, discovery);
    this.quota =
        new QuotaRouter(self, membership::ring, peers, settings.batchTimeout(), clock);
    this.quotaOwner = new QuotaOwner(store, clock, quotaTimers, quota);
    quota.ownedBy(quotaOwner);
    membership.addListener(
        (before, after) -> {
          peers.retain(after.peers());
          peers.connect(after.peers().stream().filter(p -> !p.equals(self)).toList());
        });
    membership.addListener(service::ringChanged);
    if (settings.handoff()) {
      membership.addListener(handOff::ringChanged);
    }
  }

  /** Returns this node's advertised gRPC address. */
  public String self() {
    return self;
  }

  /** Returns the request path every front door calls. */
  public ClusterRateLimitService service() {
    return service;
  }

  /** Returns the quota path every RLQS stream reports through. */
  public QuotaRouter quota() {
    return quota;
  }

  /** Returns the owner side of quota sharing (its ledgers of the buckets this node owns). */
  public QuotaOwner quotaOwner() {
    return quotaOwner;
  }

  /** Returns the membership that discovery feeds with peer sets. */
  public Membership membership() {
    return membership;
  }

  /** Returns the GLOBAL queues (tests flush them explicitly). */
  public GlobalManager global() {
    return global;
  }

  /** Returns the hand-off (its counters show what moved). */
  public HandOff handOff() {
    return handOff;
  }

  /** Returns the peer clients (their counters show batch sizes). */
  public PeerClientPool peers() {
    return peers;
  }

  /** Returns, per peer, how many forwarding calls this node sent and how many items they carried. */
  public String batchStats() {
    StringBuilder out = new StringBuilder();
    for (PeerClient c : peers.clients()) {
      long batches = c.batchesSent();
      long items = c.itemsSent();
      out.append(out.length() == 0 ? "" : ", ")
          .append(c.address())
          .append(": ")
          .append(batches)
          .append(" calls, ")
          .append(items)
          .append(" items, ")
          .append(
              batches == 0
                  ? "0"
                  : String.format(java.util.Locale.ROOT, "%.1f", (double) items / batches))
          .append(" items/call");
    }
    return out.toString();
  }

  @Override
  public List<RateLimitResponse> checkAsOwner(List<RateLimitRequest> requests) {
    return service.checkAsOwner(requests);
  }

  @Override
  public List<QuotaShare> reportQuota(List<QuotaUsage> usages) {
    return quotaOwner.report(usages);
  }

  @Override
  public int deliverQuotaShares(List<QuotaPush> pushes) {
    return quota.deliver(pushes);
  }

  @Override
  public void applyGlobals(List<UpdatePeerGlobal> globals) {
    global.apply(globals);
  }

  @Override
  public int acceptBuckets(List<BucketSnapshot> buckets, String from) {
    int n = handOff.accept(buckets, from);
    LOG.info("accepted {} of {} buckets from {}", n, buckets.size(), from);
    return n;
  }

  /**
   * Copies to {@code address}, which is about to announce its return, the buckets it will own once
   * back on this node's ring, keeping them here; answers once the copies were acknowledged or failed.
   */
  @Override
  public void prepareReturn(String address) {
    HashRing now = membership.ring();
    HashRing back = membership.ringWithReturned(address);
    if (settings.handoff() && !back.peers().equals(now.peers())) {
      await(handOff.copy(now, back), handOffWait(), "copy to returning " + address);
    }
  }

  /**
   * Takes {@code address} off the ring ({@code leaving}) or puts it back, and answers once the buckets
   * that moved because of it have been handed over, so a returning node has its counts back before
   * its {@link #join} completes.
   */
  @Override
  public void announce(String address, boolean leaving) {
    if (leaving) {
      membership.departed(address);
    } else {
      membership.returned(address);
    }
    await(handOff.pending(), handOffWait(), "hand-off to " + address);
  }

  /**
   * Joins the cluster: takes {@code discovery}'s peer sets from now on and, when hand-off is on, first
   * asks every other peer to copy it the buckets it will own (so it has the counts before any peer
   * routes to it), then tells every peer it is back so that they hand its keys over and route to it.
   * Each notice has a deadline longer
   * than the receiver's hand-off wait; join waits for the first attempt at each peer, and a peer that
   * did not acknowledge is told again in the background, with doubling waits from one batch timeout up
   * to {@link #MAX_ANNOUNCE_BACKOFF}, until it acknowledges, leaves the ring, or this node leaves.
   */
  public void join(PeerDiscovery discovery) throws Exception {
    discovery.start(membership);
    if (settings.handoff()) {
      List<CompletableFuture<Void>> copies = new ArrayList<>();
      for (String peer : membership.ring().peers()) {
        if (!peer.equals(self)) {
          copies.add(peers.call(peer, c -> c.prepareReturn(self, returnNoticeDeadline())));
        }
      }
      await(
          CompletableFuture.allOf(copies.toArray(new CompletableFuture<?>[0])),
          returnNoticeDeadline(),
          "return copy request");
      List<CompletableFuture<Void>> first = new ArrayList<>();
      for (String peer : membership.ring().peers()) {
        if (!peer.equals(self)) {
          first.add(announceReturn(peer, settings.batchTimeout()));
        }
      }
      await(
          CompletableFuture.allOf(first.toArray(new CompletableFuture<?>[0])),
          returnNoticeDeadline(),
          "join notice");
    }
  }

  // Completes when this attempt ended; a failed attempt schedules the next one after backoff.
  private CompletableFuture<Void> announceReturn(String peer, Duration backoff) {
    if (closed || !membership.ring().contains(peer)) {
      return CompletableFuture.completedFuture(null);
    }
    return peers
        .call(peer, c -> c.announce(self, false, returnNoticeDeadline()))
        .handle(
            (ok, error) -> {
              if (error != null) {
                Duration next =
                    backoff.multipliedBy(2).compareTo(MAX_ANNOUNCE_BACKOFF) > 0
                        ? MAX_ANNOUNCE_BACKOFF
                        : backoff.multipliedBy(2);
                LOG.info(
                    "return notice to {} failed, retrying in {}: {}",
                    peer,
                    backoff,
                    error.getMessage());
                scheduler.schedule(() -> announceReturn(peer, next), backoff);
              }
              return null;
            });
  }

  // The receiver of an announcement waits up to handOffWait() for its hand-off before answering.
  private Duration returnNoticeDeadline() {
    return handOffWait().plus(settings.batchTimeout());
  }

  private Duration handOffWait() {
    return settings.batchTimeout().multipliedBy(4);
  }

  /**
   * Leaves the cluster: sends queued GLOBAL hits; when hand-off is on, copies its buckets to their
   * next owners (keeping them and answering meanwhile), tells every other peer this node is leaving,
   * then takes itself off its own ring (so what changed since the copies goes to the next owners and
   * later requests are forwarded there), waiting at most {@code wait} for each step; then sends the GLOBAL
   * hits and broadcasts queued meanwhile (requests keep arriving until the listeners stop) and closes
   * the peer clients. GLOBAL hits queued after that are dropped with a logged error.
   */
  public void leave(Duration wait) {
    if (closed) {
      return;
    }
    closed = true;
    global.close();
    if (settings.handoff()) {
      HashRing ring = membership.ring();
      await(handOff.copy(ring, ring.without(self)), wait, "copy before leaving");
      announceToAll(true, wait);
      membership.departed(self);
      await(handOff.pending(), wait, "hand-off on shutdown");
    }
    await(global.flush(), wait, "final GLOBAL flush");
    peers.close();
  }

  private void announceToAll(boolean leaving, Duration wait) {
    List<CompletableFuture<Void>> calls = new ArrayList<>();
    for (String peer : membership.ring().peers()) {
      if (!peer.equals(self)) {
        calls.add(peers.call(peer, c -> c.announce(self, leaving, wait)));
      }
    }
    await(
        CompletableFuture.allOf(calls.toArray(new CompletableFuture<?>[0])),
        wait,
        leaving ? "leave notice" : "join notice");
  }

  private static void await(CompletableFuture<?> f, Duration wait, String what) {
    try {
      f.get(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      LOG.warn("{} did not reach every peer: {}", what, e.toString());
    }
  }

  /** Leaves the cluster, waiting up to four batch timeouts for the hand-off. */
  @Override
  public void close() {
    leave(handOffWait());
  }
}
