package dev.weir.core.cluster;

import dev.weir.core.cluster.global.GlobalManager;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerException;
import dev.weir.core.cluster.ring.HashRing;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.engine.RequestValidator;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.limiter.LocalRateLimitService;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The cluster's request path: answers each item where its bucket lives and reassembles the answers in
 * request order.
 *
 * <p>Design: each item is validated, gets {@code created_at} (now, when unset) and reads the ring once.
 * The owner answers locally; a GLOBAL item on a non-owner is answered at once from the local copy and
 * its hits are queued for the owner; any other item is forwarded to the owner through its peer client
 * (batched unless NO_BATCHING or batching is off) and its answer carries {@code metadata.owner}. When a
 * forward fails and the ring now names another owner (the ring changed while the call was in flight),
 * the item is routed again, up to {@link #MAX_ATTEMPTS} times, locally if this node became the owner;
 * otherwise the item's error names the peer. Each peer call has a deadline, so no item waits past it.
 */
public final class ClusterRateLimitService implements RateLimitService, NodeHealth {

  /** How many times one item is routed before its error is returned. */
  public static final int MAX_ATTEMPTS = 3;

  /** The health message of a node whose discovery has not yet reported a peer list with it. */
  public static final String WAITING_FOR_DISCOVERY =
      "waiting for peer discovery: no peer list including this instance has been applied yet";

  /**
   * The health message of a node whose peer list contains it but whose discovery has not yet
   * reached its source (so the list is discovery's stand-in: this node alone, or the last peers).
   */
  public static final String WAITING_FOR_SOURCE =
      "waiting for peer discovery: its source has not answered yet";

  /** The health message of a joined node that a later peer list left out, as Gubernator words it. */
  public static final String NOT_FOUND_IN_PEER_LIST = "this instance is not found in the peer list";

  /** How many peers {@link #notInPeerList} names before it only counts the rest. */
  static final int PEERS_NAMED = 3;

  private final String self;
  private final Supplier<HashRing> ring;
  private final LocalCheck local;
  private final PeerClientPool peers;
  private final GlobalManager global;
  private final Clock clock;
  private final PeerDiscovery discovery;
  private volatile boolean peersApplied;
  private volatile boolean joined;

  /**
   * Creates the service of node {@code self}.
   *
   * @param self this node's advertised gRPC address
   * @param ring the current ring
   * @param local evaluates requests this node answers itself
   * @param peers clients of the other nodes
   * @param global the GLOBAL queues
   * @param clock the source of {@code created_at} when a request has none
   * @param discovery reports a degraded membership source in health (may be null)
   */
  public ClusterRateLimitService(
      String self,
      Supplier<HashRing> ring,
      LocalCheck local,
      PeerClientPool peers,
      GlobalManager global,
      Clock clock,
      PeerDiscovery discovery) {
    this.self = self;
    this.ring = ring;
    this.local = local;
    this.peers = peers;
    this.global = global;
    this.clock = clock;
    this.discovery = discovery;
  }

  /**
   * {@inheritDoc}
   *
   * <p>The future is already complete when every item was answered on this node (owned here, GLOBAL,
   * or invalid), so a caller can answer on the calling thread.
   */
  @Override
  public CompletableFuture<List<RateLimitResponse>> check(List<RateLimitRequest> requests) {
    int n = requests.size();
    if (n > MAX_BATCH_SIZE) {
      return CompletableFuture.failedFuture(
          new RequestTooLargeException(LocalRateLimitService.TOO_LARGE_MESSAGE));
    }
    RateLimitResponse[] answers = new RateLimitResponse[n];
    CompletableFuture<?>[] forwarded = null;
    HashRing current = ring.get();
    long now = 0;
    for (int i = 0; i < n; i++) {
      RateLimitRequest r = requests.get(i);
      String invalid = validate(r);
      if (invalid != null) {
        answers[i] = RateLimitResponse.error(invalid);
        continue;
      }
      if (r.createdAt() == 0) {
        now = now == 0 ? clock.wallMillis() : now;
        r = r.withCreatedAt(now);
      }
      RateLimitResponse local = answerHere(current, r);
      if (local != null) {
        answers[i] = local;
      } else {
        if (forwarded == null) {
          forwarded = new CompletableFuture<?>[n];
        }
        int index = i;
        forwarded[i] = route(r, 1).thenAccept(answer -> answers[index] = answer);
      }
    }
    if (forwarded == null) {
      return CompletableFuture.completedFuture(Arrays.asList(answers));
    }
    List<CompletableFuture<?>> waits = new ArrayList<>();
    for (CompletableFuture<?> f : forwarded) {
      if (f != null) {
        waits.add(f);
      }
    }
    return CompletableFuture.allOf(waits.toArray(new CompletableFuture<?>[0]))
        .thenApply(v -> Arrays.asList(answers));
  }

  /**
   * Returns the answer to {@code r} when this node gives it without a peer call on {@code current}:
   * it owns the key, the request is GLOBAL, or the ring is empty (the item's error); null when the
   * owner is another peer.
   */
  private RateLimitResponse answerHere(HashRing current, RateLimitRequest r) {
    String owner;
    try {
      owner = current.ownerOf(r.hashKey());
    } catch (IllegalStateException e) {
      return RateLimitResponse.error(e.getMessage());
    }
    if (owner.equals(self)) {
      RateLimitResponse answer = local.check(r);
      if (r.has(Behavior.GLOBAL)) {
        global.queueBroadcast(r);
      }
      return answer;
    }
    if (r.has(Behavior.GLOBAL)) {
      RateLimitResponse answer = local.check(r);
      global.queueHits(r);
      return answer.withMetadata(Map.of("owner", owner));
    }
    return null;
  }

  /**
   * Evaluates {@code requests} as their owner, as a peer asked: GLOBAL items are hits aggregated by a
   * non-owner and are applied with DRAIN_OVER_LIMIT, then broadcast.
   */
  public List<RateLimitResponse> checkAsOwner(List<RateLimitRequest> requests) {
    List<RateLimitResponse> out = new ArrayList<>(requests.size());
    for (RateLimitRequest r : requests) {
      String invalid = validate(r);
      if (invalid != null) {
        out.add(RateLimitResponse.error(invalid));
        continue;
      }
      RateLimitRequest req = withCreatedAt(r);
      if (req.has(Behavior.GLOBAL)) {
        req = req.withBehavior(req.behavior() | Behavior.DRAIN_OVER_LIMIT);
        out.add(local.check(req));
        global.queueBroadcast(req);
      } else {
        out.add(local.check(req));
      }
    }
    return out;
  }

  /**
   * Notes that the ring became {@code after}: any change means discovery applied a peer list, so
   * health stops reporting {@link #WAITING_FOR_DISCOVERY}, and a ring that contains this node joins
   * it once discovery reports no problem; register it as a {@link Membership.RingListener}.
   */
  public void ringChanged(HashRing before, HashRing after) {
    peersApplied = true;
    joinIfReady(after);
  }

  /**
   * Returns whether this node has joined: a ring containing it was in place while discovery
   * reported no problem, so the peers came from discovery's source, not from its stand-in list.
   */
  public boolean joined() {
    return joined;
  }

  private void joinIfReady(HashRing current) {
    if (!joined && current.contains(self) && discoveryProblem().isEmpty()) {
      joined = true;
    }
  }

  private String discoveryProblem() {
    return discovery == null ? "" : discovery.problem();
  }

  /**
   * {@inheritDoc}
   *
   * <p>Unhealthy, with the problems joined by {@code |}, until the node has {@linkplain #joined()
   * joined}: while no peer list has been applied yet ({@link #WAITING_FOR_DISCOVERY}), while the
   * applied lists lack this node ({@link #notInPeerList}), or while discovery has not reached its
   * source ({@link #WAITING_FOR_SOURCE}: etcd, the API server or DNS failing since start-up, so the
   * node would otherwise serve alone); after joining, when a ring lacks this node ({@link
   * #NOT_FOUND_IN_PEER_LIST}); and when a peer on the ring failed recently. After joining, a
   * discovery problem is appended to the message but does not make the node unhealthy: discovery
   * keeps the last peers while it is degraded, as Gubernator's health ignores discovery.
   */
  @Override
  public HealthStatus health() {
    HashRing current = ring.get();
    joinIfReady(current);
    List<String> problems = new ArrayList<>();
    if (!joined) {
      if (!peersApplied) {
        problems.add(WAITING_FOR_DISCOVERY);
      } else if (!current.contains(self)) {
        problems.add(notInPeerList(self, current.peers()));
      } else {
        problems.add(WAITING_FOR_SOURCE);
      }
    } else if (!current.contains(self)) {
      problems.add(NOT_FOUND_IN_PEER_LIST);
    }
    Map<String, String> errors = peers.recentErrors();
    errors.forEach(
        (peer, error) -> {
          if (current.contains(peer)) {
            problems.add(error);
          }
        });
    boolean healthy = problems.isEmpty();
    String discoveryProblem = discoveryProblem();
    if (!discoveryProblem.isEmpty()) {
      problems.add(discoveryProblem);
    }
    return new HealthStatus(
        healthy, String.join("|", problems), current.peers().size(), self, current.peers());
  }

  /**
   * Returns the health message of node {@code self} before it joined, when discovery applied the
   * peer list {@code peers} without it: names this node and the first {@value #PEERS_NAMED} peers.
   */
  public static String notInPeerList(String self, List<String> peers) {
    StringBuilder named = new StringBuilder();
    for (int i = 0; i < Math.min(PEERS_NAMED, peers.size()); i++) {
      named.append(i == 0 ? "" : ", ").append(peers.get(i));
    }
    if (peers.size() > PEERS_NAMED) {
      named.append(", ... and ").append(peers.size() - PEERS_NAMED).append(" more");
    }
    return "this instance (" + self + ") is not in the peer list [" + named + "]; discovery must"
        + " report this node's advertise address (WEIR_ADVERTISE_ADDRESS)";
  }

  private CompletableFuture<RateLimitResponse> route(RateLimitRequest r, int attempt) {
    HashRing current = ring.get();
    RateLimitResponse here = answerHere(current, r);
    if (here != null) {
      return CompletableFuture.completedFuture(here);
    }
    String owner = current.ownerOf(r.hashKey());
    Map<String, String> ownerMeta = Map.of("owner", owner);
    return peers
        .call(owner, c -> c.forward(r))
        .handle(
            (answer, error) -> {
              if (error == null) {
                return CompletableFuture.completedFuture(answer.withMetadata(ownerMeta));
              }
              HashRing now = ring.get();
              String nowOwner = now.isEmpty() ? owner : now.ownerOf(r.hashKey());
              if (!nowOwner.equals(owner) && attempt < MAX_ATTEMPTS) {
                return route(r, attempt + 1);
              }
              return CompletableFuture.completedFuture(
                  RateLimitResponse.error(forwardError(owner, error)).withMetadata(ownerMeta));
            })
        .thenCompose(f -> f);
  }

  private static String forwardError(String owner, Throwable error) {
    Throwable root = error;
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof PeerException) {
        return t.getMessage();
      }
      root = t;
    }
    return "error while forwarding to peer '" + owner + "': " + root.getMessage();
  }

  private RateLimitRequest withCreatedAt(RateLimitRequest r) {
    return r.createdAt() == 0 ? r.withCreatedAt(clock.wallMillis()) : r;
  }

  private static String validate(RateLimitRequest r) {
    return RequestValidator.validate(r).orElse(null);
  }
}
