package dev.weir.core.testkit;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterRateLimitService;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.PeerHandler;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.peer.PeerListener;
import dev.weir.core.cluster.peer.PeersService;
import dev.weir.core.cluster.peer.auth.PeerSecret;
import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.cluster.snapshot.SnapshotDirectory;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.BucketCheck;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.ExecutorScheduler;
import dev.weir.core.time.Scheduler;
import dev.weir.core.time.SystemClock;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.ring.HashRing;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * An in-JVM cluster of nodes on 127.0.0.1, each with a real {@link PeerListener} on an ephemeral
 * port serving {@code PeersV1}, its own store and a {@link ClusterNode}; membership is fed to every
 * node as static discovery would. The peer protocol is authenticated with a secret made for the
 * cluster ({@link #secret()}), unless the cluster was started with other {@link PeerSecurity}.
 * Counts the peer calls each node receives per method (after authentication) and records each
 * node's refusals ({@link Node#metrics()}). With a snapshot directory in the settings, the nodes
 * started together restore the snapshots there before the membership is published, and hand the
 * restored buckets to their owners after.
 */
public final class LocalCluster implements AutoCloseable {

  private volatile Node joining;

  private final ClusterSettings settings;
  private final Clock clock;
  private final Function<BucketStore, BucketCheck> localCheck;
  private final PeerSecret secret = PeerSecret.of(UUID.randomUUID().toString());
  private final PeerSecurity security;
  private final ExecutorScheduler scheduler = new ExecutorScheduler("local-cluster", 2);
  private final Scheduler quotaTimers;
  private final Scheduler timers;
  private final List<Node> nodes = new ArrayList<>();
  private final List<String> ghosts = new ArrayList<>();
  private final Set<String> cuts = ConcurrentHashMap.newKeySet();

  private LocalCluster(
      ClusterSettings settings,
      Clock clock,
      Function<BucketStore, BucketCheck> localCheck,
      PeerSecurity security,
      Scheduler quotaTimers,
      Scheduler timers) {
    this.settings = settings;
    this.clock = clock;
    this.localCheck = localCheck;
    this.security = security != null ? security : PeerSecurity.sharedSecret(secret);
    this.timers = timers != null ? timers : scheduler;
    this.quotaTimers = quotaTimers != null ? quotaTimers : this.timers;
  }

  /**
   * Starts {@code n} nodes with {@code settings} on the system clock, each deciding with the real
   * engine through a {@link LocalLimiter} over an {@link InMemoryBucketStore}.
   */
  public static LocalCluster start(int n, ClusterSettings settings) {
    return start(n, settings, List.of());
  }

  /**
   * Starts {@code n} nodes as {@link #start(int, ClusterSettings)} does, whose discovery also
   * reports {@code ghosts}: addresses no node listens on, as peers that never started.
   */
  public static LocalCluster start(int n, ClusterSettings settings, List<String> ghosts) {
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    return start(
        n,
        settings,
        SystemClock.INSTANCE,
        store -> new LocalLimiter(engine, store, SystemClock.INSTANCE)::decide,
        null,
        null,
        ghosts);
  }

  /**
   * Starts {@code n} nodes that evaluate locally with {@code localCheck} over each node's store, for
   * example {@code store -> new LocalLimiter(engine, store, clock)::check}.
   */
  public static LocalCluster start(
      int n, ClusterSettings settings, Clock clock, Function<BucketStore, BucketCheck> localCheck) {
    return start(n, settings, clock, localCheck, null, null, List.of());
  }

  /**
   * Starts {@code n} nodes as above whose peer protocol runs with {@code security} (null: the
   * cluster's shared secret), for example {@link PeerSecurity#insecure()}.
   */
  public static LocalCluster start(
      int n,
      ClusterSettings settings,
      Clock clock,
      Function<BucketStore, BucketCheck> localCheck,
      PeerSecurity security) {
    return start(n, settings, clock, localCheck, security, null, List.of());
  }

  /**
   * Starts {@code n} nodes as above whose quota owners time the ends of spent windows on {@code
   * quotaTimers} (null: the cluster's real scheduler), for example a {@link FakeScheduler} on the
   * cluster's {@link FakeClock}, so that quota tests run in fake time.
   */
  public static LocalCluster start(
      int n,
      ClusterSettings settings,
      Clock clock,
      Function<BucketStore, BucketCheck> localCheck,
      PeerSecurity security,
      Scheduler quotaTimers) {
    return start(n, settings, clock, localCheck, security, quotaTimers, List.of());
  }

  /**
   * Starts {@code n} nodes as above whose members run every timer (batching deadlines, probes,
   * departure marks, resends, quota windows) on {@code timers}, for example a {@link FakeScheduler}
   * on the cluster's {@link FakeClock}, and whose discovery also reports {@code ghosts}: addresses
   * no node listens on yet ({@link #startAt}).
   */
  public static LocalCluster start(
      int n,
      ClusterSettings settings,
      Clock clock,
      Function<BucketStore, BucketCheck> localCheck,
      Scheduler timers,
      List<String> ghosts) {
    LocalCluster c = new LocalCluster(settings, clock, localCheck, null, null, timers);
    c.ghosts.addAll(ghosts);
    return c.startNodes(n);
  }

  /**
   * Starts {@code n} nodes in fake time: each decides with the real engine through a {@link
   * LocalLimiter} reading {@code clock} and runs every timer on {@code timers}, a {@link
   * FakeScheduler} on that clock; discovery also reports {@code ghosts}, addresses no node listens
   * on yet ({@link #startAt}).
   */
  public static LocalCluster startInFakeTime(
      int n, ClusterSettings settings, FakeClock clock, FakeScheduler timers, String... ghosts) {
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    return start(
        n,
        settings,
        clock,
        store -> new LocalLimiter(engine, store, clock)::decide,
        timers,
        List.of(ghosts));
  }

  private static LocalCluster start(
      int n,
      ClusterSettings settings,
      Clock clock,
      Function<BucketStore, BucketCheck> localCheck,
      PeerSecurity security,
      Scheduler quotaTimers,
      List<String> ghosts) {
    LocalCluster c = new LocalCluster(settings, clock, localCheck, security, quotaTimers, null);
    c.ghosts.addAll(ghosts);
    return c.startNodes(n);
  }

  private LocalCluster startNodes(int n) {
    for (int i = 0; i < n; i++) {
      nodes.add(newNode());
    }
    nodes.forEach(node -> node.cluster().restoreSnapshots());
    nodes.forEach(node -> node.handler.startedJoined = true);
    publishMembership();
    nodes.forEach(node -> node.cluster().handOverRestored().join());
    return this;
  }

  /** Returns the secret the nodes share (whether or not their security uses it). */
  public PeerSecret secret() {
    return secret;
  }

  /** Returns node {@code i} in start order. */
  public Node node(int i) {
    return nodes.get(i);
  }

  /** Returns the running nodes. */
  public List<Node> nodes() {
    return List.copyOf(nodes);
  }

  /** Returns the running node that owns {@code hashKey} on the current ring. */
  public Node ownerOf(String hashKey) {
    String owner = nodes.get(0).cluster().membership().ring().ownerOf(hashKey);
    return nodes.stream().filter(n -> n.address().equals(owner)).findFirst().orElseThrow();
  }

  /**
   * Returns the first key {@code prefix + i} whose bucket {@code name + "_" + key} {@code node}
   * owns on the current ring (see {@link RingKeys#ownedBy}).
   */
  public String keyOwnedBy(Node node, String name, String prefix) {
    HashRing ring = nodes.get(0).cluster().membership().ring();
    return RingKeys.ownedBy(ring, name, prefix, node.address());
  }

  /** Returns the running nodes that do not own {@code hashKey}. */
  public List<Node> nonOwnersOf(String hashKey) {
    Node owner = ownerOf(hashKey);
    return nodes.stream().filter(n -> n != owner).toList();
  }

  /** Starts one more node and tells every node the new peer set. */
  public Node addNode() {
    Node n = newNode();
    nodes.add(n);
    publishMembership();
    return n;
  }

  /**
   * Starts one more member that has not joined and that no node's discovery lists yet, nor {@link
   * #nodes}, as a Kubernetes pod that is not ready; {@link #list} lists it.
   */
  public Node startUnlisted() {
    return newNode();
  }

  /**
   * Adds {@code node}, started by {@link #startUnlisted}, to {@link #nodes} and tells every node the
   * new peer set, as discovery does once the pod is ready.
   */
  public void list(Node node) {
    nodes.add(node);
    publishMembership();
  }

  /**
   * Stops {@code node} gracefully (leave notice and hand-off when enabled), tells the others the new
   * peer set, then stops its server and its peer clients.
   */
  public void removeNode(Node node) {
    node.cluster().leave(Duration.ofSeconds(5));
    nodes.remove(node);
    publishMembership();
    node.listener.close();
    node.cluster().close();
  }

  /**
   * Stops every node gracefully, one after the other as {@link #removeNode} does (each hands its
   * buckets to the nodes still running and, with a snapshot directory, writes its snapshot).
   */
  public void stopAll() {
    while (!nodes.isEmpty()) {
      removeNode(nodes.get(0));
    }
  }

  /**
   * Stops {@code node}'s server without telling anyone, as a crash would; discovery's membership is
   * unchanged, and the others find it down when they call it or see its connection fail.
   */
  public void kill(Node node) {
    node.listener.close();
    awaitTermination(node.server());
  }

  /** Restarts a killed {@code node}'s server on the same port, with the same (surviving) state. */
  public void revive(Node node) {
    node.restartServer();
  }

  /**
   * Restarts {@code node} as SIGTERM and a new process would: it leaves gracefully, then a fresh member
   * (empty store) starts on the same address and joins through static discovery of every node.
   * {@link #node} returns the old member until the join completed, as the server opens its front
   * doors only after joining.
   */
  public Node restart(Node node) {
    stop(node);
    return startAgain(node);
  }

  /**
   * Stops {@code node} as SIGTERM would (it leaves gracefully, its listener stops), leaving it in
   * {@link #nodes} since static discovery still lists it; {@link #startAgain} starts its successor.
   */
  public void stop(Node node) {
    node.cluster().leave(Duration.ofSeconds(5));
    node.listener.close();
    awaitTermination(node.server());
    node.cluster().close();
  }

  /**
   * Starts a fresh member (empty store) on the address of {@code node}, {@linkplain #stop stopped}
   * or {@linkplain #kill killed}, and joins it through static discovery of every node; returns it
   * once joined, in {@code node}'s place.
   */
  public Node startAgain(Node node) {
    int index = nodes.indexOf(node);
    Node fresh = join(newNode(node.port));
    nodes.set(index, fresh);
    return fresh;
  }

  /**
   * Starts a fresh member (empty store) on the address of {@code node}, {@linkplain #stop stopped}
   * or {@linkplain #kill killed}, and joins it through {@code discovery}, whose problem its {@code
   * discovery} health component reads; returns it once {@link
   * ClusterNode#join} returned, in {@code node}'s place.
   */
  public Node startAgain(Node node, PeerDiscovery discovery) {
    int index = nodes.indexOf(node);
    Node fresh = join(newNode(node.port, discovery), discovery);
    nodes.set(index, fresh);
    return fresh;
  }

  /**
   * Starts a member on {@code ghost}, an address discovery reported while no node listened there,
   * and joins it through static discovery of every node; returns it once joined.
   */
  public Node startAt(String ghost) {
    if (!ghosts.remove(ghost)) {
      throw new IllegalArgumentException("not a ghost of this cluster: " + ghost);
    }
    Node fresh = newNode(Integer.parseInt(ghost.substring(ghost.lastIndexOf(':') + 1)));
    try {
      return join(fresh);
    } finally {
      nodes.add(fresh);
    }
  }

  private Node join(Node fresh) {
    Set<String> peers = new TreeSet<>(ghosts);
    peers.add(fresh.address());
    nodes.forEach(n -> peers.add(n.address()));
    return join(fresh, new StaticDiscovery(fresh.address(), List.copyOf(peers)));
  }

  private Node join(Node fresh, PeerDiscovery discovery) {
    joining = fresh;
    try {
      fresh.cluster().join(discovery);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    } finally {
      joining = null;
    }
    return fresh;
  }

  /**
   * Cuts the link between {@code a} and {@code b} both ways: every peer call from one to the other
   * fails with {@code UNAVAILABLE} at once until {@link #heal}, while both still reach the others.
   */
  public void cut(Node a, Node b) {
    cutOneWay(a, b);
    cutOneWay(b, a);
  }

  /** Fails every peer call from {@code from} to {@code to} until {@link #heal}. */
  public void cutOneWay(Node from, Node to) {
    cuts.add(from.address() + ">" + to.address());
  }

  /** Heals the link between {@code a} and {@code b}, both ways. */
  public void heal(Node a, Node b) {
    cuts.remove(a.address() + ">" + b.address());
    cuts.remove(b.address() + ">" + a.address());
  }

  /** Returns the fresh member {@link #restart} is joining, or null when none is. */
  public Node joining() {
    return joining;
  }

  private void publishMembership() {
    Set<String> peers = new TreeSet<>(ghosts);
    nodes.forEach(n -> peers.add(n.address()));
    nodes.forEach(n -> n.cluster().membership().accept(peers));
  }

  private Node newNode() {
    return newNode(0);
  }

  private Node newNode(int port) {
    return newNode(port, null);
  }

  // discovery, when not null, is the one whose problem the node's discovery health reads.
  private Node newNode(int port, PeerDiscovery discovery) {
    DeferredHandler handler = new DeferredHandler();
    Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    Node node = new Node(handler, calls, clock, security);
    node.startServer(port);
    BucketStore store = new InMemoryBucketStore(clock);
    ClusterNode cluster =
        new ClusterNode(
            node.address(),
            settings,
            store,
            localCheck.apply(store),
            timers,
            clock,
            discovery,
            address ->
                new CuttableChannel(
                    security.channel(address),
                    () -> cuts.contains(node.address() + ">" + address)),
            quotaTimers);
    settings
        .snapshotDir()
        .ifPresent(
            dir ->
                cluster.useSnapshots(
                    new SnapshotDirectory(
                        dir,
                        node.address(),
                        new PeerInputValidator(InputLimits.DEFAULTS, node.address()),
                        clock)));
    handler.target = cluster;
    node.cluster = cluster;
    node.store = store;
    return node;
  }

  @Override
  public void close() {
    for (Node n : nodes) {
      n.cluster().peers().close();
      n.listener.close();
    }
    nodes.clear();
    scheduler.close();
  }

  private static void awaitTermination(Server server) {
    try {
      server.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** One node of the cluster. */
  public static final class Node {
    private final DeferredHandler handler;
    private final Map<String, AtomicInteger> calls;
    private final Clock clock;
    private final PeerSecurity security;
    private final RecordingMetrics metrics = new RecordingMetrics();
    private PeerListener listener;
    private int port;
    private ClusterNode cluster;
    private BucketStore store;

    private Node(
        DeferredHandler handler,
        Map<String, AtomicInteger> calls,
        Clock clock,
        PeerSecurity security) {
      this.handler = handler;
      this.calls = calls;
      this.clock = clock;
      this.security = security;
    }

    /** Returns the node's advertised gRPC address, {@code 127.0.0.1:port}. */
    public String address() {
      return "127.0.0.1:" + port;
    }

    /** Returns the node's cluster member. */
    public ClusterNode cluster() {
      return cluster;
    }

    /** Returns the node's request path. */
    public ClusterRateLimitService service() {
      return cluster.service();
    }

    /** Returns the node's store. */
    public BucketStore store() {
      return store;
    }

    /** Returns the node's peer listener's server. */
    public Server server() {
      return listener.server();
    }

    /** Returns the refusals of peer calls and peer input this node counted. */
    public RecordingMetrics metrics() {
      return metrics;
    }

    /** Checks {@code requests} on this node and waits for the answers. */
    public List<RateLimitResponse> check(RateLimitRequest... requests) {
      return cluster.service().decide(List.of(requests)).join();
    }

    /** Returns how many calls of {@code method} (e.g. {@code GetPeerRateLimits}) this node received. */
    public int callsReceived(String method) {
      AtomicInteger n = calls.get(method);
      return n == null ? 0 : n.get();
    }

    /** Runs {@code hook} before this node answers each forwarded batch; a throwing hook fails the call. */
    public void beforeOwnerCheck(Runnable hook) {
      handler.beforeOwnerCheck = hook;
    }

    /**
     * Runs {@code hook} with the items of each batch a peer forwards to this node, before this node
     * answers it (after {@link #beforeOwnerCheck}); a throwing hook fails the call.
     */
    public void beforeAnswerForwarded(
        java.util.function.Consumer<List<RateLimitRequest>> hook) {
      handler.beforeAnswerForwarded = hook;
    }

    /**
     * Runs {@code hook} with the {@code leaving} flag before this node handles each membership
     * announcement; a throwing hook fails the call.
     */
    public void beforeAnnounce(java.util.function.Consumer<Boolean> hook) {
      handler.beforeAnnounce = hook;
    }

    /**
     * Runs {@code hook} before this node answers each batch of quota usage a peer sends it as the
     * buckets' owner ({@code ReportQuotaUsage}); a throwing hook fails the call.
     */
    public void beforeAnswerQuotaUsage(Runnable hook) {
      handler.beforeAnswerQuotaUsage = hook;
    }

    /** Runs {@code hook} before this node merges each batch of handed-over buckets. */
    public void beforeAcceptBuckets(Runnable hook) {
      handler.beforeAcceptBuckets = hook;
    }

    /**
     * Runs {@code hook} before this node handles each request of a returning peer for copies of its
     * buckets ({@code PrepareReturn}); a throwing hook fails the call.
     */
    public void beforePrepareReturn(Runnable hook) {
      handler.beforePrepareReturn = hook;
    }

    /**
     * Runs {@code hook} after the target of each call this node relays ({@code weir_relay_to},
     * indirect probes included) answered it; a throwing hook fails the call, which the target has
     * then handled already.
     */
    public void afterRelayAnswered(Runnable hook) {
      handler.afterRelayAnswered = hook;
    }

    /**
     * Holds each indirect probe this node is asked to relay (a {@code weir_relay_to} call carrying
     * no items) until {@code release} completes, then relays it; no thread waits meanwhile. A probe
     * still held when its relay's {@code within} runs out fails with a {@link
     * java.util.concurrent.TimeoutException}, as a relay not answered in time does.
     */
    public void holdProbeRelaysUntil(CompletionStage<?> release) {
      handler.probeRelaysHeld = release;
    }

    /**
     * Returns how many calls carrying forwarded items this node relayed to another peer ({@code
     * weir_relay_to}); indirect probes, which carry none, are not counted.
     */
    public int itemCallsRelayed() {
      return handler.itemCallsRelayed.get();
    }

    /**
     * Returns a future that completes once this node is asked to relay a call carrying forwarded
     * items, before it relays it.
     */
    public CompletableFuture<Void> firstItemCallRelayed() {
      return handler.firstItemCallRelayed.copy();
    }

    /**
     * Returns how many bucket transfers ({@code TransferBuckets} with {@code weir_relay_to}) this
     * node was asked to relay to another peer.
     */
    public int transfersRelayed() {
      return handler.transfersRelayed.get();
    }

    /** Returns how many return notices this node has handled (its hand-off back included). */
    public int returnNoticesHandled() {
      return handler.returnNoticesHandled.get();
    }

    private void restartServer() {
      startServer(port);
    }

    private void startServer(int atPort) {
      ServerInterceptor counter =
          new ServerInterceptor() {
            @Override
            public <Q, A> ServerCall.Listener<Q> interceptCall(
                ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
              calls
                  .computeIfAbsent(
                      call.getMethodDescriptor().getBareMethodName(), m -> new AtomicInteger())
                  .incrementAndGet();
              return next.startCall(call, headers);
            }
          };
      try {
        int bound = atPort != 0 ? atPort : FreePorts.next();
        listener =
            PeerListener.start(
                new InetSocketAddress("127.0.0.1", bound),
                new PeersService(
                    handler,
                    new PeerInputValidator(InputLimits.DEFAULTS, "127.0.0.1:" + bound),
                    clock,
                    metrics),
                security,
                metrics,
                InputLimits.DEFAULT_MAX_MESSAGE_BYTES,
                counter);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      port = listener.port();
    }
  }

  private static final class DeferredHandler implements PeerHandler {
    private volatile ClusterNode target;
    // A node started with the cluster is a member without a join: it serves until it leaves.
    private volatile boolean startedJoined;
    private volatile Runnable beforeOwnerCheck = () -> {};
    private volatile Runnable beforeAcceptBuckets = () -> {};
    private volatile Runnable beforePrepareReturn = () -> {};
    private volatile Runnable beforeAnswerQuotaUsage = () -> {};
    private volatile Runnable afterRelayAnswered = () -> {};
    private volatile java.util.function.Consumer<List<RateLimitRequest>> beforeAnswerForwarded =
        items -> {};
    private final AtomicInteger returnNoticesHandled = new AtomicInteger();
    private final AtomicInteger itemCallsRelayed = new AtomicInteger();
    private final CompletableFuture<Void> firstItemCallRelayed = new CompletableFuture<>();
    private volatile CompletionStage<?> probeRelaysHeld = CompletableFuture.completedFuture(null);
    private final AtomicInteger transfersRelayed = new AtomicInteger();
    private volatile java.util.function.Consumer<Boolean> beforeAnnounce = leaving -> {};

    @Override
    public boolean serving() {
      ClusterNode node = target;
      if (node == null) {
        return false;
      }
      return startedJoined ? !node.left() : node.serving();
    }

    @Override
    public List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests) {
      beforeOwnerCheck.run();
      return target.decideAsOwner(requests);
    }

    @Override
    public CompletableFuture<List<RateLimitResponse>> answerForwarded(
        List<RateLimitRequest> requests) {
      beforeOwnerCheck.run();
      beforeAnswerForwarded.accept(requests);
      return target.answerForwarded(requests);
    }

    @Override
    public void applyGlobals(List<UpdatePeerGlobal> globals) {
      target.applyGlobals(globals);
    }

    @Override
    public int acceptBuckets(List<BucketSnapshot> buckets, String from) {
      beforeAcceptBuckets.run();
      return target.acceptBuckets(buckets, from);
    }

    @Override
    public CompletableFuture<Void> prepareReturn(String address, SocketAddress caller) {
      beforePrepareReturn.run();
      return target.prepareReturn(address, caller);
    }

    @Override
    public List<QuotaShare> reportQuota(List<QuotaUsage> usages) {
      return target.reportQuota(usages);
    }

    @Override
    public CompletableFuture<List<QuotaShare>> answerQuotaUsage(List<QuotaUsage> usages) {
      beforeAnswerQuotaUsage.run();
      return target.answerQuotaUsage(usages);
    }

    @Override
    public CompletableFuture<GetPeerRateLimitsResp> relay(
        GetPeerRateLimitsReq request, Duration within) {
      CompletionStage<?> held = probeRelaysHeld;
      if (request.getRequestsCount() > 0) {
        itemCallsRelayed.incrementAndGet();
        firstItemCallRelayed.complete(null);
        held = CompletableFuture.completedFuture(null);
      }
      CompletableFuture<?> release = held.toCompletableFuture();
      CompletableFuture<GetPeerRateLimitsResp> relayed =
          release.isDone()
              ? release.thenCompose(released -> target.relay(request, within))
              : release
                  .copy()
                  .orTimeout(within.toNanos(), TimeUnit.NANOSECONDS)
                  .thenComposeAsync(released -> target.relay(request, within));
      return relayed.thenApply(
          resp -> {
            afterRelayAnswered.run();
            return resp;
          });
    }

    @Override
    public CompletableFuture<Integer> relayTransfer(
        dev.weir.proto.gubernator.TransferBucketsReq request, Duration within) {
      transfersRelayed.incrementAndGet();
      return target.relayTransfer(request, within);
    }

    @Override
    public int deliverQuotaShares(List<QuotaPush> pushes) {
      return target.deliverQuotaShares(pushes);
    }

    @Override
    public CompletableFuture<Void> announce(String address, boolean leaving) {
      beforeAnnounce.accept(leaving);
      return target
          .announce(address, leaving)
          .thenRun(
              () -> {
                if (!leaving) {
                  returnNoticesHandled.incrementAndGet();
                }
              });
    }
  }
}
