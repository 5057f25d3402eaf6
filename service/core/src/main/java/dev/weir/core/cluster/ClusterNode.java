package dev.weir.core.cluster;

import dev.weir.core.cluster.global.GlobalManager;
import dev.weir.core.cluster.handoff.FallbackCounts;
import dev.weir.core.cluster.handoff.FallbackHandBack;
import dev.weir.core.cluster.handoff.HandOff;
import dev.weir.core.cluster.handoff.HandOn;
import dev.weir.core.cluster.handoff.TransferRetry;
import dev.weir.core.cluster.peer.IndirectProbes;
import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.cluster.peer.PeerHandler;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.peer.PeerLiveness;
import dev.weir.core.cluster.peer.PeerProber;
import dev.weir.core.cluster.peer.PeerRelay;
import dev.weir.core.cluster.peer.PeersComponent;
import dev.weir.core.cluster.peer.RefusedPeerCall;
import dev.weir.core.cluster.peer.RelayForwarder;
import dev.weir.core.cluster.snapshot.SnapshotDirectory;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.engine.SaturatingMath;
import dev.weir.core.grpc.Answers;
import dev.weir.core.health.HealthChecker;
import dev.weir.core.limiter.BucketCheck;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.quota.QuotaOwner;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Backoff;
import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import dev.weir.core.toplimited.TopLimitedOffException;
import dev.weir.core.toplimited.TopLimitedView;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.ring.HashRing;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One cluster member: the ring, the peer clients and their liveness, the GLOBAL queues, hand-off,
 * the request path and the member's health, wired together over this node's store. The composition
 * root serves it (as a {@link PeerHandler}) on the peer listener, hands {@link #service()} to the
 * front doors, feeds discovery's peer sets to {@link #membership()} and adds its own components
 * (draining, config) to {@link #health()}.
 *
 * <p>A peer found down ({@link PeerLiveness}) that another peer still reaches ({@link
 * IndirectProbes}) stays on the ring and its items are relayed through that peer. One that no other
 * peer reaches leaves the ring with {@link PeerFailureMode#REROUTE} (its keys go to their next
 * owner, and are handed back when it answers again) or stays on it with {@link
 * PeerFailureMode#FAIL} (its keys fail at once); either way it is probed until it answers. A peer
 * that announced it is leaving stays off the ring in either mode until it announces its return,
 * answers a probe, or, once its departure mark has expired, another peer vouches for it (its return
 * notice missed this node across a cut).
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

  /**
   * How many times a ring change's bucket transfer is sent in all when it fails (to the owners on
   * the ring of then, waiting one batch timeout, then twice that, up to {@link
   * #MAX_ANNOUNCE_BACKOFF} between sends).
   */
  public static final int TRANSFER_ATTEMPTS = 10;

  /** How many times restored buckets are sent to an owner that does not acknowledge them. */
  public static final int RESTORE_ATTEMPTS = 10;

  private final String self;
  private final ClusterSettings settings;
  private final Scheduler scheduler;
  private final Membership membership;
  private final PeerClientPool peers;
  private final PeerAddressChanges listenerMoves = new PeerAddressChanges();
  private volatile Supplier<TopLimitedView> topLimited =
      () -> {
        throw new TopLimitedOffException();
      };
  private final GlobalManager global;
  private final HandOff handOff;
  private final HandOn handOn;
  private final FallbackCounts fallbackCounts;
  private final FallbackHandBack fallbackHandBack;
  // The owners whose fallback counts a hand-back queued on the hand-off's thread will take.
  private final Set<String> handBacksQueued = ConcurrentHashMap.newKeySet();
  private final ExecutorService handOffScans =
      Executors.newSingleThreadExecutor(
          task -> {
            Thread thread = new Thread(task, "weir-handoff");
            thread.setDaemon(true);
            return thread;
          });
  private final ClusterRateLimitService service;
  private final QuotaRouter quota;
  private final QuotaOwner quotaOwner;
  private final PeerLiveness liveness;
  private final PeerProber prober;
  private final IndirectProbes probes;
  private final PeerRelay relay;
  private final DiscoveryComponent discoveryHealth;
  private final HealthChecker health;
  private final ClusterHealth clusterHealth;
  private final Map<String, Object> departures = new ConcurrentHashMap<>();
  private final Set<String> leavers = ConcurrentHashMap.newKeySet();
  // The addresses discovery does not list that this node is copying buckets to, each with how many
  // copies are running: the peer pool makes clients of them too.
  private final Map<String, Integer> unlistedReturning = new ConcurrentHashMap<>();
  private final AtomicReference<LateReturn> lateReturn = new AtomicReference<>(LateReturn.NONE);
  private final CompletableFuture<Void> lateReturnEnded = new CompletableFuture<>();
  // Whether a health check found discovery answering with this node alone while it awaits peers.
  private final AtomicBoolean aloneSeen = new AtomicBoolean();
  private volatile PeerDiscovery discovery;
  // Guards closed against serving and against sending return notices: leave() sets it under it.
  private final Object lifecycle = new Object();
  // The return notices sent and not yet answered: leave() awaits them before its leave notice.
  private final Set<CompletableFuture<Void>> returnNotices = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;
  private volatile boolean serving;
  private volatile boolean left;
  private final BucketStore store;
  private final Clock clock;
  private volatile SnapshotDirectory snapshots;
  // Guarded by this: whether the snapshot directory was loaded, and the restored keys not yet
  // acknowledged by their owner (released once acknowledged, expired or owned here).
  private boolean restored;
  private Set<String> restoredPending = Set.of();
  private int restoredPendingPeak;
  // Whether restored keys wait for their owner once the hand-over began (join's own comes first).
  private volatile boolean restoredWaiting;

  /**
   * Creates the member {@code self} (its advertised gRPC address).
   *
   * @param self this node's advertised gRPC address
   * @param settings the cluster settings
   * @param store this node's buckets
   * @param local evaluates requests against {@code store}
   * @param scheduler runs batching and GLOBAL timers
   * @param clock the time
   * @param discovery reports a degraded source in health (may be null)
   */
  public ClusterNode(
      String self,
      ClusterSettings settings,
      BucketStore store,
      BucketCheck local,
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
      BucketCheck local,
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
      BucketCheck local,
      Scheduler scheduler,
      Clock clock,
      PeerDiscovery discovery,
      Function<String, ManagedChannel> peerChannels,
      Scheduler quotaTimers) {
    this.self = self;
    this.settings = settings;
    this.store = store;
    this.clock = clock;
    this.scheduler = scheduler;
    this.liveness = new PeerLiveness(clock);
    boolean reroute = settings.peerFailureMode() == PeerFailureMode.REROUTE;
    this.membership =
        new Membership(
            HashRing.of(List.of(), settings.replicas(), settings.hash()),
            self,
            clock,
            scheduler,
            DEPARTED_TTL,
            reroute ? this::offRing : this::leftAndDown);
    liveness.addListener(new RingRefresh());
    this.peers =
        new PeerClientPool(
            address ->
                new PeerClient(
                    address,
                    peerChannels.apply(address),
                    settings.peerClientSettings(),
                    scheduler,
                    clock),
            liveness,
            reroute
                ? peer -> false
                : peer -> liveness.isDown(peer) && membership.ring().contains(peer),
            peer ->
                membership.discovered().contains(peer) || unlistedReturning.containsKey(peer));
    this.prober =
        new PeerProber(
            liveness,
            peers,
            membership::members,
            scheduler,
            PeerProber.INTERVAL,
            settings.batchTimeout());
    liveness.addListener(prober);
    this.relay =
        new PeerRelay(
            self,
            peers,
            membership::members,
            peer -> departures.containsKey(peer) && membership.discovered().contains(peer),
            peer -> leavers.contains(peer) && membership.discovered().contains(peer),
            settings.batchTimeout());
    this.probes =
        new IndirectProbes(
            self,
            liveness,
            peers,
            membership::members,
            scheduler,
            PeerProber.INTERVAL,
            settings.batchTimeout(),
            membership::refresh);
    liveness.addListener(probes);
    peers.relayThrough(
        probes, new RelayForwarder(peers, settings.peerClientSettings(), clock));
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
    this.handOff =
        new HandOff(
            self,
            store,
            peers,
            clock,
            handOffWait(),
            handOffScans,
            new TransferRetry(
                scheduler,
                membership::ring,
                settings.batchTimeout(),
                settings.batchTimeout().compareTo(MAX_ANNOUNCE_BACKOFF) > 0
                    ? settings.batchTimeout()
                    : MAX_ANNOUNCE_BACKOFF,
                TRANSFER_ATTEMPTS));
    this.service =
        new ClusterRateLimitService(
            self, membership::ring, local, peers, global, clock, scheduler, settings.standInAfter());
    this.fallbackCounts = new FallbackCounts(clock, store);
    this.fallbackHandBack = new FallbackHandBack(fallbackCounts, handOff::handBack);
    this.handOn =
        new HandOn(
            self,
            membership::ring,
            peers,
            service::decideAsOwner,
            this::answerAsFormerOwner,
            this::handBackFallbackCounts,
            settings.batchTimeout().dividedBy(2));
    this.discoveryHealth =
        new DiscoveryComponent(self, membership::members, discovery, this::joinHeld);
    this.health =
        new HealthChecker()
            .add(discoveryHealth)
            .add(new PeersComponent(liveness, membership::members, this::voucherOf));
    this.clusterHealth = new ClusterHealth(self, membership, health, this::dataCenter);
    this.quota =
        new QuotaRouter(self, membership::ring, peers, settings.batchTimeout(), clock);
    this.quotaOwner = new QuotaOwner(store, clock, quotaTimers, quota);
    quota.ownedBy(quotaOwner);
    membership.addListener(
        (before, after) -> {
          peers.retain(membership.members());
          peers.connect(after.peers().stream().filter(p -> !p.equals(self)).toList());
        });
    membership.addListener(discoveryHealth);
    membership.addListener((before, after) -> handOverRestoredAgain());
    if (settings.handoff()) {
      membership.addListener(handOff::ringChanged);
      membership.addListener((before, after) -> handOverFallbackCountsMovedOn(after));
      global.reportCopyWritesTo(handOff::writingCopy);
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

  /**
   * Returns the member's health components (discovery, peers), to which the composition root adds
   * its own; readiness and gRPC health read {@link HealthChecker#ready()}.
   */
  public HealthChecker health() {
    return health;
  }

  /** Returns the member's health as Gubernator's {@code HealthCheck} reports it. */
  public ClusterHealth nodeHealth() {
    return clusterHealth;
  }

  /** Returns the {@code discovery} health component (whether this node has joined). */
  public DiscoveryComponent discoveryHealth() {
    return discoveryHealth;
  }

  /** Returns what this node knows of each peer's liveness. */
  public PeerLiveness liveness() {
    return liveness;
  }

  /** Returns whether the peers this node does not reach are reached by others (indirect probes). */
  public IndirectProbes probes() {
    return probes;
  }

  // The peer relaying to a peer this node does not reach, or null; read by health.
  private String voucherOf(String peer) {
    return probes.voucher(peer);
  }

  // The peers off the ring with reroute: found down here, and reached by no other peer.
  private Set<String> offRing() {
    Set<String> down = liveness.down();
    if (down.isEmpty()) {
      return down;
    }
    Set<String> off = new HashSet<>(down);
    off.retainAll(probes.unreached());
    return off;
  }

  // The peers off the ring with fail: down since they announced their leave, and reached by no
  // other peer (a voucher reaching one vouches for its return, whose notice missed this node).
  private Set<String> leftAndDown() {
    if (leavers.isEmpty()) {
      return Set.of();
    }
    Set<String> off = new HashSet<>(leavers);
    off.retainAll(liveness.down());
    off.retainAll(probes.unreached());
    return off;
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

  /** Makes {@code source} what this node answers its peers' {@code TopLimited} calls with. */
  public void topLimitedFrom(Supplier<TopLimitedView> source) {
    this.topLimited = Objects.requireNonNull(source, "source");
  }

  @Override
  public TopLimitedView topLimited() {
    return topLimited.get();
  }

  /**
   * Asks every other member for its top-limited keys (at most {@code limit} each), each call with
   * deadline {@code timeout}; returns the answers by peer address, in address order. The members
   * found down and left off the ring are asked too: they still hold the counts of the answers they
   * gave, and when they do not answer their failed call tells the caller whose keys it lacks.
   */
  public Map<String, CompletableFuture<TopLimitedView>> askPeersTopLimited(
      int limit, Duration timeout) {
    Map<String, CompletableFuture<TopLimitedView>> out = new LinkedHashMap<>();
    for (String peer : membership.members()) {
      if (!peer.equals(self)) {
        out.put(peer, peers.call(peer, c -> c.topLimited(limit, timeout)));
      }
    }
    return out;
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
  public List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests) {
    return service.decideAsOwner(requests);
  }

  /**
   * Answers items a peer forwarded: with hand-off on, an item whose key this node's ring gives to
   * another peer (the sender's ring is behind) is handed on to that owner ({@link HandOn}), so no
   * hit counts on a bucket this node handed away; with it off, every item is answered here, as
   * Gubernator does.
   */
  @Override
  public CompletableFuture<List<RateLimitResponse>> answerForwarded(
      List<RateLimitRequest> requests) {
    return settings.handoff()
        ? handOn.answer(requests)
        : CompletableFuture.completedFuture(service.decideAsOwner(requests));
  }

  @Override
  public CompletableFuture<GetPeerRateLimitsResp> relay(
      GetPeerRateLimitsReq request, Duration within) {
    return relay.relay(request, within);
  }

  @Override
  public CompletableFuture<Integer> relayTransfer(TransferBucketsReq request, Duration within) {
    return relay.relayTransfer(request, within);
  }

  @Override
  public List<QuotaShare> reportQuota(List<QuotaUsage> usages) {
    return quotaOwner.report(usages);
  }

  /**
   * Answers usage a peer sent to this node as its buckets' owner: with hand-off on, a usage whose
   * key this node's ring gives to another peer (the sender's ring is behind) is handed on to that
   * owner ({@link QuotaRouter#answer}), so it is counted and shared where the bucket's count went;
   * with it off, every usage is answered here.
   */
  @Override
  public CompletableFuture<List<QuotaShare>> answerQuotaUsage(List<QuotaUsage> usages) {
    return settings.handoff()
        ? quota.answer(usages)
        : CompletableFuture.completedFuture(quotaOwner.report(usages));
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
   * back on this node's ring, keeping them here, and sends it the restored buckets it owns that it
   * has not acknowledged yet; answers once the copies were acknowledged or failed. An address
   * discovery does not list yet (a Kubernetes pod before it is ready) gets the buckets it will own
   * once listed, while this node's ring stays as it is: the hand-over when discovery lists it sends
   * only the hits taken here since the copy. Its restored buckets are copies too, each still held
   * for its owner on this node's ring until that owner acknowledges it. Once the last copy to such
   * an address ended, its client and liveness are forgotten unless discovery lists it by then. Such
   * an address must be the {@code caller}'s own (its host the IP the call came from, {@link
   * PeerInputValidator#checkCallersOwn}); otherwise the future fails with a {@link RefusedPeerCall}
   * saying why, and this node never calls it.
   */
  @Override
  public CompletableFuture<Void> prepareReturn(String address, SocketAddress caller) {
    boolean unlisted = !membership.discovered().contains(address);
    if (unlisted) {
      Optional<String> refused = PeerInputValidator.checkCallersOwn(address, caller);
      if (refused.isPresent()) {
        return CompletableFuture.failedFuture(new RefusedPeerCall(refused.get()));
      }
      unlistedReturning.merge(address, 1, Integer::sum);
    }
    CompletableFuture<Void> work;
    String what = "restored buckets to returning " + address;
    try {
      HashRing now = membership.ring();
      HashRing back = membership.ringWithReturned(address);
      CompletableFuture<Void> restoredBuckets =
          unlisted ? copyRestoredTo(address, back) : handOverRestoredTo(address, back);
      if (settings.handoff() && !back.peers().equals(now.peers())) {
        work = CompletableFuture.allOf(handOff.copy(now, back), restoredBuckets);
        what = "copy to returning " + address;
      } else {
        work = restoredBuckets;
      }
    } catch (RuntimeException e) {
      work = CompletableFuture.failedFuture(e);
    }
    if (unlisted) {
      work = work.whenComplete((ok, error) -> copyToUnlistedEnded(address));
    }
    try {
      return withinHandOffWait(work, what);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Ends one copy to {@code address}, which discovery did not list when it was asked for; after the
   * last one, unless discovery lists it by then, forgets its client, its liveness and its indirect
   * probes, as discovery dropping it would: it is called for nothing else.
   */
  private void copyToUnlistedEnded(String address) {
    Integer copies =
        unlistedReturning.computeIfPresent(address, (a, n) -> n == 1 ? null : n - 1);
    if (copies != null || membership.discovered().contains(address)) {
      return;
    }
    Set<String> known = new HashSet<>(membership.discovered());
    known.addAll(unlistedReturning.keySet());
    // The client first: once forgotten, it reports nothing more to the liveness.
    peers.retain(known);
    liveness.retain(known);
    probes.retain(known);
  }

  /**
   * Takes {@code address} off the ring ({@code leaving}: it is down until it answers again, from
   * one batch timeout on) or puts it back (its notice is an answer), and answers once the buckets
   * that moved because of it (and, when it returns, the restored buckets it owns that it has not
   * acknowledged yet) have been handed over, so a returning node has its counts back before its
   * {@link #join} completes.
   *
   * <p>A leaving node is taken down only one batch timeout after its notice, when every forward
   * sent to it before the notice has ended: taking a peer down cancels the calls in flight to it and
   * routes their items again, to the next owner, while the leaving node, still draining, answers
   * them too (handing them on to that owner), so each such hit would count twice.
   */
  @Override
  public CompletableFuture<Void> announce(String address, boolean leaving) {
    if (leaving) {
      leavers.add(address);
      membership.departed(address);
      leftLater(address);
    } else {
      departures.remove(address);
      leavers.remove(address);
      liveness.back(address);
      membership.returned(address);
    }
    CompletableFuture<Void> restoredBuckets =
        leaving
            ? CompletableFuture.completedFuture(null)
            : handOverRestoredTo(address, membership.ring());
    return withinHandOffWait(
        CompletableFuture.allOf(
            membership.delivered().thenCompose(told -> handOff.pending()), restoredBuckets),
        "hand-off to " + address);
  }

  // Takes address down one batch timeout from now, unless it announced its return meanwhile.
  private void leftLater(String address) {
    Object notice = new Object();
    departures.put(address, notice);
    scheduler.schedule(
        () -> {
          if (departures.remove(address, notice)) {
            liveness.left(address);
          }
        },
        settings.batchTimeout());
  }

  /**
   * Returns a future that completes when {@code work} does or {@link #handOffWait()} has passed on
   * the scheduler, whichever is first; a failure or the timeout is logged, not passed on.
   */
  private CompletableFuture<Void> withinHandOffWait(CompletableFuture<?> work, String what) {
    if (Answers.completedNormally(work)) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> answered = new CompletableFuture<>();
    Scheduler.Task timer =
        scheduler.schedule(
            () -> {
              if (answered.complete(null)) {
                LOG.warn("{} did not reach every peer within {}", what, handOffWait());
              }
            },
            handOffWait());
    work.whenComplete(
        (ok, error) -> {
          timer.cancel();
          if (error != null) {
            LOG.warn("{} did not reach every peer: {}", what, error.toString());
          }
          answered.complete(null);
        });
    return answered;
  }

  /**
   * Joins the cluster: takes {@code discovery}'s peer sets from now on (closing the clients of the
   * peers a set drops) and, when hand-off is on,
   * first asks every other peer to copy it the buckets it will own (so it has the counts before any
   * peer routes to it), then tells every peer it is back so that they hand its keys over and route
   * to it. Each notice has a deadline longer than the receiver's hand-off wait; join waits for the
   * first attempt at each peer, and a peer that did not acknowledge is told again in the
   * background, with doubling waits from one batch timeout up to {@link #MAX_ANNOUNCE_BACKOFF},
   * until it acknowledges, leaves the ring, or this node leaves. The peers the first round did not
   * reach are named in one line ({@link JoinReport}): INFO when they were unreachable or slow, as
   * peers still starting are, WARN when one refused. It is {@linkplain #serving() serving} from
   * the end of the copies, before the first return notice: a peer that found it down brings it
   * back on its return notice or on a probe answered from then on, never while it is still copying,
   * and a probe that crosses a return notice does not take it down again. With a {@linkplain
   * #useSnapshots snapshot directory} it first {@linkplain #restoreSnapshots restores} the
   * snapshots there and, once serving, {@linkplain #handOverRestored hands} the restored buckets
   * other nodes own to them.
   *
   * <p>When hand-off is on and discovery, reporting a problem, gave this node no other peer by the
   * end of {@code discovery.start} (a first DNS lookup that failed, etcd unreachable, Kubernetes
   * listing nothing in time), join returns without those steps and without serving; the first
   * later set that lists another peer, or this node alone while discovery reports no problem, runs
   * them, in the same order, on a thread of their own (not discovery's), and the {@code discovery}
   * health component does not count the node as joined until they ended ({@link
   * DiscoveryComponent#RETURNING}). When discovery stops reporting its problem without a new set
   * (a lookup that resolves to this node alone), the second health check in a row that finds it so
   * runs them: the first may fall between a source clearing its problem and delivering its peers.
   * Once the node began to {@linkplain #leave leave}, they neither serve nor send a return notice,
   * and the node does not join.
   */
  public void join(PeerDiscovery discovery) throws Exception {
    restoreSnapshots();
    this.discovery = discovery;
    discovery.start(
        discovered -> {
          membership.accept(discovered);
          liveness.retain(discovered);
          leavers.retainAll(discovered);
          probes.retain(discovered);
          // A peer dropped while down was already off the ring: no ring change closes its client.
          peers.retain(discovered);
          peers.renew(listenerMoves.update(discovered, discovery::peerAddress));
          returnLateIfAnswered(discovery);
        });
    if (settings.handoff()
        && !hasOtherMembers()
        && !discovery.problem().isEmpty()
        && awaitPeers()) {
      LOG.info(
          "joined alone while peer discovery fails ({}): asking the peers for this node's counts"
              + " and announcing its return once discovery lists them",
          discovery.problem());
      return;
    }
    returnToPeers();
  }

  /**
   * Marks this node as awaiting the first set with other peers; returns false when one arrived
   * meanwhile, so that join returns to its peers at once.
   */
  private boolean awaitPeers() {
    lateReturn.set(LateReturn.AWAITING);
    return !(hasOtherMembers() && lateReturn.compareAndSet(LateReturn.AWAITING, LateReturn.NONE));
  }

  // Starts join's return steps once, after a join alone, a set lists another peer or this node alone
  // while discovery reports no problem.
  private void returnLateIfAnswered(PeerDiscovery discovery) {
    aloneSeen.set(false);
    if (lateReturn.get() == LateReturn.AWAITING
        && (hasOtherMembers() || discovery.problem().isEmpty())) {
      startLateReturn();
    }
  }

  // Runs join's return steps on a thread of their own unless they run or ran already.
  private void startLateReturn() {
    if (closed || !lateReturn.compareAndSet(LateReturn.AWAITING, LateReturn.RUNNING)) {
      return;
    }
    Thread thread =
        new Thread(
            () -> {
              try {
                returnToPeers();
              } catch (RuntimeException e) {
                LOG.warn("return to the peers discovery listed after the join failed", e);
              } finally {
                lateReturn.set(LateReturn.NONE);
                discoveryHealth.returnEnded();
                lateReturnEnded.complete(null);
              }
            },
            "weir-late-return");
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * Returns a future that completes when the return to the peers discovery listed after a join
   * alone ended.
   */
  CompletableFuture<Void> lateReturnEnded() {
    return lateReturnEnded;
  }

  /** Returns the data center the members' discovery reports, empty before it joins. */
  private String dataCenter() {
    PeerDiscovery source = discovery;
    return source == null ? "" : source.dataCenter();
  }

  /**
   * Returns whether the {@code discovery} health component must not join this node yet: it is
   * leaving, or it joined alone while discovery failed and its return has not ended. While it
   * awaits a set, the second check in a row that finds discovery answering with this node alone,
   * with no problem and no received set still held back by its coalescer, makes it serve and lets it
   * join, as a node that joined alone; the first may fall between a source clearing its problem and
   * delivering the peers it lists.
   */
  private boolean joinHeld() {
    if (closed) {
      return true;
    }
    LateReturn state = lateReturn.get();
    if (state != LateReturn.AWAITING) {
      return state == LateReturn.RUNNING;
    }
    PeerDiscovery source = discovery;
    if (hasOtherMembers()
        || source == null
        || !source.problem().isEmpty()
        || source.holdingPeers()) {
      aloneSeen.set(false);
    } else if (aloneSeen.getAndSet(true)
        && lateReturn.compareAndSet(LateReturn.AWAITING, LateReturn.NONE)) {
      serveUnlessLeaving();
      handOverRestored();
      return closed;
    }
    return true;
  }

  private boolean hasOtherMembers() {
    Set<String> members = membership.members();
    return members.size() > (members.contains(self) ? 1 : 0);
  }

  /**
   * Asks the members for copies of the buckets this node will own, serves, tells the peers on the
   * ring it is back (when hand-off is on) and hands the restored buckets to their owners: {@link
   * #join}'s steps after discovery started.
   */
  private void returnToPeers() {
    if (settings.handoff()) {
      Map<String, List<CompletableFuture<?>>> calls = new LinkedHashMap<>();
      // Members, not the ring: a peer already found down is asked too, so the report names it.
      for (String peer : membership.members()) {
        if (!peer.equals(self)) {
          calls.put(
              peer,
              new ArrayList<>(
                  List.of(peers.call(peer, c -> c.prepareReturn(self, returnNoticeDeadline())))));
        }
      }
      awaitQuietly(calls, returnNoticeDeadline());
      // It has its buckets: from its first return notice on, its probes must agree with it.
      serveUnlessLeaving();
      for (String peer : membership.ring().peers()) {
        if (!peer.equals(self)) {
          calls
              .computeIfAbsent(peer, p -> new ArrayList<>())
              .add(announceReturn(peer, settings.batchTimeout()));
        }
      }
      awaitQuietly(calls, returnNoticeDeadline());
      JoinReport report = JoinReport.of(calls, returnNoticeDeadline());
      if (!report.complete()) {
        if (report.expected()) {
          LOG.info(report.describe());
        } else {
          LOG.warn(report.describe());
        }
      }
    }
    serveUnlessLeaving();
    await(handOverRestored(), returnNoticeDeadline(), "hand-over of restored buckets");
  }

  private void serveUnlessLeaving() {
    synchronized (lifecycle) {
      if (!closed) {
        serving = true;
      }
    }
  }

  /** Where a join that found no other peer while discovery failed stands. */
  private enum LateReturn {
    /** The join found peers, or its return to them ended. */
    NONE,
    /** The join found no other peer while discovery failed: the first set with peers returns. */
    AWAITING,
    /** The return to the peers of a set that arrived after the join runs. */
    RUNNING
  }

  /**
   * Makes this node load its buckets from {@code directory} when it {@linkplain #join joins} and
   * save them there when it {@linkplain #close closes} ({@code WEIR_SNAPSHOT_DIR}); call it before
   * {@link #join}.
   */
  public void useSnapshots(SnapshotDirectory directory) {
    this.snapshots = directory;
  }

  /**
   * Loads the snapshot files of the {@linkplain #useSnapshots snapshot directory} (once; {@link
   * #join} calls it first) and merges each live bucket into this node's store with hand-off's rule
   * for a first snapshot; returns how many live buckets the store kept. It claims further files
   * only while the buckets it restored and those of the next file still live at its clock fit the
   * store's {@linkplain BucketStore#capacity() capacity} ({@code WEIR_CACHE_SIZE}) with the slack
   * its segments need ({@linkplain BucketStore#capacityToHold capacityToHold}), its own file
   * first and always at least one, leaving the others to the nodes that start after it (logged at
   * INFO; a file whose buckets have all expired is always claimed, and deleted); when the
   * files it loaded hold more live buckets than the store has room for, it keeps the most consumed
   * that each segment of the store holds ({@link RestoredBuckets}, which holds no more than that
   * while the files load) and logs at WARN how many it dropped for want of room (not those that
   * expired meanwhile) and the {@code WEIR_CACHE_SIZE} that holds them all (none for a store
   * without a capacity bound). Files that fail a check are logged and ignored, and so is a
   * directory this node could not save to (at ERROR, naming it). Does nothing without a snapshot
   * directory.
   */
  public synchronized int restoreSnapshots() {
    SnapshotDirectory directory = snapshots;
    if (directory == null || restored) {
      return 0;
    }
    directory.check().ifPresent(problem -> LOG.error(problem));
    long started = System.nanoTime();
    RestoredBuckets buckets = new RestoredBuckets(store, handOff, clock);
    SnapshotDirectory.Loaded loaded = directory.load(buckets::offer, buckets::room);
    Set<String> keys = buckets.restore();
    restored = true;
    restoredPending = keys;
    restoredPendingPeak = keys.size();
    if (!loaded.files().isEmpty() || !loaded.rejected().isEmpty()) {
      LOG.info(
          "restored {} live buckets of {} from {} snapshot files in {} in {} ms ({} files ignored)",
          keys.size(),
          loaded.bucketCount(),
          loaded.files().size(),
          directory.dir(),
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
          loaded.rejected().size());
    }
    long dropped = buckets.dropped();
    if (dropped > 0 && buckets.capacity() == Long.MAX_VALUE) {
      LOG.warn(
          "dropped {} of the {} live buckets restored from snapshot files in {}: this node's store"
              + " refused them though it has no capacity bound",
          dropped,
          buckets.live(),
          directory.dir());
    } else if (dropped > 0) {
      long enough = store.capacityToHold(buckets.live());
      if (enough <= buckets.capacity()) {
        enough = store.capacityToHold(SaturatingMath.add(buckets.capacity(), dropped));
      }
      LOG.warn(
          "dropped {} of the {} live buckets restored from snapshot files in {}: this node's cache,"
              + " WEIR_CACHE_SIZE={}, holds {} of them, the most consumed of the keys that go to"
              + " each of its segments (each holds an equal share of WEIR_CACHE_SIZE and evicts on"
              + " its own once full); set WEIR_CACHE_SIZE to at least {} to restore them all{}",
          dropped,
          buckets.live(),
          directory.dir(),
          buckets.capacity(),
          keys.size(),
          enough,
          enough > buckets.live()
              ? " (more than the "
                  + buckets.live()
                  + ": the slack its segments need, as keys do not spread evenly over them)"
              : "");
    }
    if (!loaded.left().isEmpty()) {
      LOG.info(
          "left {} snapshot files in {} for the nodes that start next ({}): with the {} buckets"
              + " restored, their live buckets do not fit WEIR_CACHE_SIZE={}",
          loaded.left().size(),
          directory.dir(),
          loaded.left().stream().map(p -> p.getFileName().toString()).toList(),
          keys.size(),
          buckets.capacity());
    }
    return keys.size();
  }

  /**
   * Sends the restored buckets whose key another node owns on the current ring to that owner
   * through hand-off ({@code TransferBuckets}), keeping them here; the keys whose transfer failed
   * are sent again on the ring of then, after one batch timeout, then twice that, up to {@link
   * #MAX_ANNOUNCE_BACKOFF} between attempts, {@value #RESTORE_ATTEMPTS} attempts in all. Those still
   * not acknowledged then are sent to their owner when it prepares or announces its return, when a
   * peer answers again and when the ring changes, until acknowledged or expired. Completes after the
   * first attempt; {@link #join} calls it last.
   */
  public CompletableFuture<Void> handOverRestored() {
    Set<String> keys;
    synchronized (this) {
      keys = Set.copyOf(restoredPending);
      restoredWaiting = !keys.isEmpty();
    }
    if (keys.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> first = new CompletableFuture<>();
    handOverRestored(keys, 1, settings.batchTimeout(), first);
    return first;
  }

  private void handOverRestored(
      Set<String> keys, int attempt, Duration backoff, CompletableFuture<Void> first) {
    if (closed) {
      first.complete(null);
      return;
    }
    handOverRestoredOn(keys, membership.ring())
        .whenComplete(
            (ok, error) -> {
              first.complete(null);
              Set<String> left = pendingOf(keys);
              if (left.isEmpty()) {
                return;
              }
              if (attempt >= RESTORE_ATTEMPTS || closed) {
                LOG.warn(
                    "{} restored buckets did not reach their owners in {} attempts; kept here and"
                        + " sent to each owner when it returns",
                    left.size(),
                    attempt);
                return;
              }
              Duration next = Backoff.doubled(backoff, MAX_ANNOUNCE_BACKOFF);
              scheduler.schedule(() -> handOverRestored(left, attempt + 1, next, first), backoff);
            });
  }

  // Sends keys to their owners on ring and releases those acknowledged, expired or owned here; a
  // hand-over that throws before sending fails as a whole, as one that reached no owner.
  private CompletableFuture<Void> handOverRestoredOn(Set<String> keys, HashRing ring) {
    if (keys.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Set<String>> sent;
    try {
      sent = handOff.handOver(keys, ring);
    } catch (RuntimeException e) {
      LOG.warn("hand-over of {} restored buckets failed before sending; kept here", keys.size(), e);
      sent = CompletableFuture.failedFuture(e);
    }
    return sent
        .handle(
            (failed, error) -> {
              releaseRestored(keys, error != null ? keys : failed);
              return null;
            });
  }

  /**
   * Sends the restored buckets not yet acknowledged whose owner on {@code ring} is {@code peer} to
   * it (found on the hand-off's thread); completes when they were acknowledged or failed.
   */
  private CompletableFuture<Void> handOverRestoredTo(String peer, HashRing ring) {
    if (!hasRestoredPending()) {
      return CompletableFuture.completedFuture(null);
    }
    try {
      return CompletableFuture.supplyAsync(() -> restoredOwnedBy(peer, ring), handOffScans)
          .thenCompose(owned -> handOverRestoredOn(owned, ring));
    } catch (RejectedExecutionException e) {
      return CompletableFuture.completedFuture(null);
    }
  }

  /**
   * Copies the restored buckets not yet acknowledged whose owner on {@code ring} is {@code peer} to
   * it (found on the hand-off's thread), keeping each held for its owner on this node's ring: {@code
   * peer} is not on it until discovery lists it, and may never be. The copies count as nothing
   * sent: each bucket counts once, when the owner that releases it acknowledges it. Completes when
   * the copies were acknowledged or failed.
   */
  private CompletableFuture<Void> copyRestoredTo(String peer, HashRing ring) {
    if (!hasRestoredPending()) {
      return CompletableFuture.completedFuture(null);
    }
    try {
      return CompletableFuture.supplyAsync(() -> restoredOwnedBy(peer, ring), handOffScans)
          .thenCompose(owned -> handOff.copyOver(owned, ring))
          .thenApply(failed -> (Void) null);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.completedFuture(null);
    }
  }

  // The restored keys not yet acknowledged whose owner on ring is peer.
  private Set<String> restoredOwnedBy(String peer, HashRing ring) {
    Set<String> owned = new HashSet<>();
    for (String key : pendingOf(null)) {
      if (peer.equals(ring.ownerOf(key))) {
        owned.add(key);
      }
    }
    return owned;
  }

  /**
   * Returns this node's answers to {@code items} whose hand-on to their owner {@code owner} failed
   * with {@code error}, remembering their keys when the owner did not get them, so that what it
   * counts is handed back to that owner when it is reached again ({@link
   * #handBackFallbackCounts}).
   */
  private List<RateLimitResponse> answerAsFormerOwner(
      List<RateLimitRequest> items, String owner, Throwable error) {
    List<RateLimitResponse> answers = service.decideAsFormerOwner(items, owner, error);
    fallbackCounts.counted(items, answers, owner, error);
    return answers;
  }

  /**
   * Sends the buckets this node counted for {@code peer} when it failed to hand them on to it, now
   * that {@code peer} is reached again, and forgets them, in the background on the hand-off's
   * thread, queued at most once per peer and only when some are remembered for it; keys the ring
   * gives to another node by then were sent to that node at the ring change ({@link
   * #handOverFallbackCountsMovedOn}).
   */
  private void handBackFallbackCounts(String peer) {
    if (!fallbackCounts.hasFor(peer) || !handBacksQueued.add(peer)) {
      return;
    }
    try {
      handOffScans.execute(
          () -> {
            handBacksQueued.remove(peer);
            HashRing ring = membership.ring();
            fallbackHandBack.send(fallbackCounts.takeFor(peer, ring), ring);
          });
    } catch (RejectedExecutionException e) {
      handBacksQueued.remove(peer);
    }
  }

  /**
   * Sends the buckets this node counted for a peer when it failed to hand them on to it, whose
   * keys the ring {@code after} a change gives to another node, to that node, in the background on
   * the hand-off's thread: the change's hand-off sends only the buckets this node owned before it.
   */
  private void handOverFallbackCountsMovedOn(HashRing after) {
    if (fallbackCounts.isEmpty()) {
      return;
    }
    try {
      handOffScans.execute(
          () -> {
            HashRing ring = membership.ring();
            fallbackHandBack.send(fallbackCounts.takeMovedOn(ring, self), ring);
          });
    } catch (RejectedExecutionException e) {
      // closing
    }
  }

  // Sends every restored bucket not yet acknowledged to its owner on the current ring, in the
  // background on the hand-off's thread.
  private void handOverRestoredAgain() {
    if (!hasRestoredPending()) {
      return;
    }
    try {
      handOffScans.execute(() -> handOverRestoredOn(pendingOf(null), membership.ring()));
    } catch (RejectedExecutionException e) {
      // closing: the restored buckets stay here
    }
  }

  private boolean hasRestoredPending() {
    return restoredWaiting && !closed;
  }

  // The keys of among (every one when null) not yet acknowledged by their owner.
  private synchronized Set<String> pendingOf(Set<String> among) {
    if (among == null) {
      return Set.copyOf(restoredPending);
    }
    Set<String> out = new HashSet<>(among);
    out.retainAll(restoredPending);
    return out;
  }

  // Releases the keys of sent that are not in failed; a set drained below a quarter of its peak is
  // copied, so the memory of released keys is returned.
  private synchronized void releaseRestored(Set<String> sent, Set<String> failed) {
    if (restoredPending.isEmpty()) {
      return;
    }
    List<String> released = new ArrayList<>();
    for (String key : sent) {
      if (!failed.contains(key) && restoredPending.remove(key)) {
        released.add(key);
      }
    }
    handOff.forgetRestored(released);
    if (restoredPending.isEmpty()) {
      restoredPending = Set.of();
      restoredPendingPeak = 0;
      restoredWaiting = false;
    } else if (restoredPending.size() < restoredPendingPeak / 4) {
      restoredPending = new HashSet<>(restoredPending);
      restoredPendingPeak = restoredPending.size();
    }
  }

  /** Returns how many restored keys this node holds to hand over to their owners. */
  synchronized int restoredKeysHeld() {
    return restoredPending.size();
  }

  /**
   * Returns whether this node has left: it sent its leave notice (without hand-off: it began to
   * {@linkplain #leave leave}), and serves no probe from then on.
   */
  public boolean left() {
    return left;
  }

  /**
   * Returns whether this node has joined and not {@linkplain #left() left}: peers' probes are
   * answered only then, also while it copies its buckets before its leave notice.
   */
  @Override
  public boolean serving() {
    return serving;
  }

  // Waits up to wait for every call; what did not end by then is reported by JoinReport.
  private static void awaitQuietly(Map<String, List<CompletableFuture<?>>> calls, Duration wait) {
    CompletableFuture<?>[] all =
        calls.values().stream().flatMap(List::stream).toArray(CompletableFuture<?>[]::new);
    try {
      CompletableFuture.allOf(all).get(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // JoinReport names each peer that failed or did not answer
    }
  }

  // Completes with this attempt's outcome; a failed attempt schedules the next one after backoff.
  private CompletableFuture<Void> announceReturn(String peer, Duration backoff) {
    CompletableFuture<Void> attempt;
    synchronized (lifecycle) {
      if (closed || !membership.ring().contains(peer)) {
        return CompletableFuture.completedFuture(null);
      }
      attempt = peers.call(peer, c -> c.announce(self, false, returnNoticeDeadline()));
      returnNotices.add(attempt);
    }
    attempt.whenComplete((ok, error) -> returnNotices.remove(attempt));
    attempt.whenComplete(
        (ok, error) -> {
          if (error != null) {
            Duration next = Backoff.doubled(backoff, MAX_ANNOUNCE_BACKOFF);
            LOG.debug(
                "return notice to {} failed, retrying in {}: {}",
                peer,
                backoff,
                error.getMessage());
            scheduler.schedule(() -> announceReturn(peer, next), backoff);
          }
        });
    return attempt;
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
   * next owners (keeping them and answering meanwhile, peers' probes too, direct or relayed, so
   * that no peer takes it down before its notice), stops serving probes, waits for the return
   * notices already sent to be answered or reach their deadline (which began before the leave), and
   * tells every other peer this node is leaving, then takes itself off its own ring (so what changed since the copies goes
   * to the next owners and later requests are forwarded there), waiting at most {@code wait} for
   * each step; then sends the GLOBAL hits and broadcasts queued meanwhile. The peer clients stay
   * open, so the calls that keep arriving until the listeners stop are forwarded to the next
   * owners: {@link #close()} closes them once the listeners have drained. GLOBAL hits queued after
   * the final flush are dropped with a logged error.
   */
  public void leave(Duration wait) {
    synchronized (lifecycle) {
      if (closed) {
        return;
      }
      closed = true;
    }
    discoveryHealth.leaving();
    global.close();
    if (settings.handoff()) {
      HashRing ring = membership.ring();
      await(handOff.copy(ring, ring.without(self)), wait, "copy before leaving");
      stopServing();
      // Each ends within its own deadline, which began before this leave; a wait shorter than that
      // deadline may let the leave notice overtake a notice still unanswered when it ends.
      Duration deadline = returnNoticeDeadline();
      await(
          CompletableFuture.allOf(returnNotices.toArray(new CompletableFuture<?>[0])),
          wait.compareTo(deadline) < 0 ? wait : deadline,
          "return notice before the leave notice");
      announceToAll(true, wait);
      membership.departed(self);
      await(
          membership.delivered().thenCompose(told -> handOff.pending()),
          wait,
          "hand-off on shutdown");
    } else {
      stopServing();
    }
    await(global.flush(), wait, "final GLOBAL flush");
  }

  private void stopServing() {
    synchronized (lifecycle) {
      left = true;
      serving = false;
    }
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

  /**
   * Leaves the cluster if it has not yet (waiting up to four batch timeouts for the hand-off),
   * stops probing and closes the peer clients: call it once nothing calls {@link #service()} any
   * more.
   */
  @Override
  public void close() {
    leave(handOffWait());
    saveSnapshot();
    handOff.close();
    prober.close();
    probes.close();
    peers.close();
    handOffScans.shutdown();
  }

  /**
   * Writes this node's live buckets to its file in the snapshot directory, after the leave's
   * hand-off, so that the file holds what the node counted until its listeners stopped. Does
   * nothing without a snapshot directory, or when this node never loaded it (a node that fails
   * before joining must not overwrite the file it did not read).
   */
  private void saveSnapshot() {
    SnapshotDirectory directory = snapshots;
    synchronized (this) {
      if (directory == null || !restored) {
        return;
      }
    }
    long started = System.nanoTime();
    try {
      int written = directory.save(store);
      LOG.info(
          "wrote {} buckets to snapshot {} in {} ms",
          written,
          directory.ownFile(),
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
    } catch (IOException | RuntimeException e) {
      LOG.error("cannot write snapshot {}: {}", directory.ownFile(), e.toString());
    }
  }

  /** Rebuilds the ring when a peer goes down or comes back, and logs it. */
  private final class RingRefresh implements PeerLiveness.Listener {
    @Override
    public void peerDown(String peer, String reason) {
      LOG.warn(
          "peer {} is down, {}: {}",
          peer,
          settings.peerFailureMode() == PeerFailureMode.REROUTE
              ? "asking other peers whether they reach it (if none does, its keys go to their"
                  + " next owner until it answers)"
              : "its keys are relayed through a peer that reaches it, or fail until it answers"
                  + " (WEIR_PEER_FAILURE_MODE=fail)",
          reason);
      membership.refresh();
    }

    @Override
    public void peerUp(String peer, Duration downFor) {
      LOG.info("peer {} answers again after {} ms down", peer, downFor.toMillis());
      leavers.remove(peer);
      membership.refresh();
      handOverRestoredAgain();
      handBackFallbackCounts(peer);
    }

    @Override
    public void stillDown(String peer) {
      membership.refresh();
    }
  }
}
