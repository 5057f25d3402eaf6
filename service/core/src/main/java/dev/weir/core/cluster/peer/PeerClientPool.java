package dev.weir.core.cluster.peer;

import dev.weir.core.concurrent.Completions;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import dev.weir.core.tracing.ClusterTracing;
import dev.weir.core.tracing.GuardedTracing;
import dev.weir.proto.gubernator.BucketSnapshot;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The {@link PeerClient}s of the current peers, created on first use and closed when a peer leaves,
 * each reporting its calls to the node's {@link PeerLiveness}: a client is told when its peer goes
 * down (it cancels its calls in flight) and when it comes back (it reconnects at once). {@link
 * #call} fails at once for the peers the pool is told to fail fast (with {@link
 * PeerFailureMode#FAIL}, the members that are down). The pool creates clients only of the peers it
 * is told are known (discovered), so a call made on an old ring, such as a hand-off scan that ran
 * after its target was dropped, fails instead of opening a client nothing would close. Once {@link
 * #close()}d the pool creates no client. In both cases {@link #get} fails and {@link #call} returns a
 * failed future, each with a {@link PeerException} saying why.
 */
public final class PeerClientPool implements AutoCloseable {

  private final Map<String, PeerClient> clients = new ConcurrentHashMap<>();
  private final Function<String, PeerClient> factory;
  private final PeerLiveness liveness;
  private final Predicate<String> failFast;
  private final Predicate<String> known;
  private volatile boolean closed;
  private volatile WeirMetrics metrics = WeirMetrics.NOOP;
  private ClusterTracing tracing = ClusterTracing.NONE;
  private volatile IndirectProbes probes;
  private volatile RelayForwarder relays;

  /**
   * Creates a pool that makes clients with {@code factory} for any address, reporting to {@code
   * liveness}, which must time on the clock the clients read (their reports carry its readings); a
   * call to a peer for which {@code failFast} holds fails at once.
   */
  public PeerClientPool(
      Function<String, PeerClient> factory,
      PeerLiveness liveness,
      Predicate<String> failFast) {
    this(factory, liveness, failFast, address -> true);
  }

  /**
   * Creates a pool that makes clients with {@code factory} for the addresses for which {@code
   * known} holds (checked when a client is created), reporting to {@code liveness}, which must time
   * on the clock the clients read (their reports carry its readings); a call to a peer for which
   * {@code failFast} holds fails at once.
   */
  public PeerClientPool(
      Function<String, PeerClient> factory,
      PeerLiveness liveness,
      Predicate<String> failFast,
      Predicate<String> known) {
    this.factory = factory;
    this.liveness = liveness;
    this.failFast = failFast;
    this.known = known;
    liveness.addListener(
        new PeerLiveness.Listener() {
          @Override
          public void peerDown(String peer, String reason) {
            PeerClient client = clients.get(peer);
            if (client != null) {
              client.peerDown(reason);
            }
          }

          @Override
          public void peerUp(String peer, Duration downFor) {
            PeerClient client = clients.get(peer);
            if (client != null) {
              client.peerUp();
            }
          }
        });
  }

  /**
   * Creates a pool that makes clients with {@code factory} and reroutes around peers that are down,
   * timing their outages on {@code clock}, which must be the clock the clients read (their reports
   * carry its readings).
   */
  public PeerClientPool(Function<String, PeerClient> factory, Clock clock) {
    this(factory, new PeerLiveness(clock), peer -> false);
  }

  /** Returns the liveness the clients report to. */
  public PeerLiveness liveness() {
    return liveness;
  }

  /**
   * Returns the client of {@code address}, creating it if needed.
   *
   * @throws PeerException if there is no client of {@code address} and the pool is closed or the
   *     address is not a known peer
   */
  public PeerClient get(String address) {
    PeerClient existing = clients.get(address);
    if (existing != null) {
      return existing;
    }
    synchronized (this) {
      if (closed) {
        throw new PeerException(
            address,
            "not calling peer '" + address + "': this node is shutting down (peer clients closed)",
            null);
      }
      if (!known.test(address)) {
        throw new PeerException(
            address,
            "not calling peer '" + address + "': discovery no longer reports it",
            null);
      }
      return clients.computeIfAbsent(
          address,
          a -> {
            PeerClient client = factory.apply(a);
            client.reportTo(metrics);
            client.traceWith(tracing);
            client.observe(liveness);
            return client;
          });
    }
  }

  /** Traces the batches of every client, present and future, with {@code value}. */
  public synchronized void traceWith(ClusterTracing value) {
    // Guarded once here, so that a failing tracer is warned of once, not once per client.
    ClusterTracing guarded = GuardedTracing.of(value);
    this.tracing = guarded;
    clients.values().forEach(c -> c.traceWith(guarded));
  }

  /** Reports the calls of every client, present and future, to {@code sink}. */
  public synchronized void reportTo(WeirMetrics sink) {
    this.metrics = sink;
    clients.values().forEach(c -> c.reportTo(sink));
  }

  /**
   * Applies {@code call} to the client of {@code address}; returns a failed future instead of
   * throwing when the pool is closed or {@code address} has no client and is not a known peer, or at
   * once when the pool fails calls to this peer fast (a peer down while the failure mode is {@link
   * PeerFailureMode#FAIL}); any other exception making the client or the call (a channel that
   * cannot be built, a call refused as it starts) fails the future with a {@link PeerException}
   * naming the peer, so that no caller's callback is cut short by it.
   */
  public <T> CompletableFuture<T> call(
      String address, Function<PeerClient, CompletableFuture<T>> call) {
    try {
      return call.apply(callable(address));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(failure(address, e));
    }
  }

  /**
   * Returns the failure of a call to {@code peer} that threw {@code e} as it was made: {@code e}
   * itself when it is a {@link PeerException}, otherwise a {@link PeerException} naming the peer.
   */
  private static PeerException failure(String peer, RuntimeException e) {
    return e instanceof PeerException refused
        ? refused
        : new PeerException(peer, "error while calling peer '" + peer + "': " + e.getMessage(), e);
  }

  /**
   * Tells whether {@code error}, the failure of a {@link #call}, most likely reached no peer: {@link
   * #refusedUnsent}, an {@link UnsentCall} (such as a call cancelled as its peer was found down
   * while it waited for the connection, {@code CANCELLED: Context cancelled}), or the call failed
   * {@code UNAVAILABLE} (the connection could not be made or broke; a peer that applied the call
   * and crashed before answering also fails so, which this cannot tell apart).
   */
  public static boolean likelyUndelivered(Throwable error) {
    return refusedUnsent(error)
        || UnsentCall.in(error)
        || Status.fromThrowable(error).getCode() == Status.Code.UNAVAILABLE;
  }

  /**
   * Tells whether {@code error}, the failure of a {@link #call}, is this pool's refusal to make the
   * call, before anything was sent: a {@link PeerException} without a cause (a closed pool, a peer
   * discovery no longer reports, a down peer while down peers fail fast, a client abandoned before
   * sending), alone or in a {@link CompletionException}. A call that failed
   * any other way may have been applied by the peer.
   */
  public static boolean refusedUnsent(Throwable error) {
    Throwable e = Completions.cause(error);
    return e instanceof PeerException && e.getCause() == null;
  }

  /**
   * Returns the client of the peer at {@code address} when it may be called now.
   *
   * @throws PeerException when the peer is down and down peers fail fast, when this pool is
   *     closed, or when the address is not a known peer
   */
  public PeerClient callable(String address) {
    if (failFast.test(address)) {
      throw new PeerException(
          address,
          "not calling peer '"
              + address
              + "': it is down ("
              + liveness.downReason(address)
              + ") and WEIR_PEER_FAILURE_MODE is fail",
          null);
    }
    return get(address);
  }

  /**
   * Relays, from now on, what {@link #forward} sends to an owner this node does not reach through
   * the peer {@code probes} names ({@link IndirectProbes#via}), with {@code relays}.
   */
  public void relayThrough(IndirectProbes probes, RelayForwarder relays) {
    this.relays = relays;
    this.probes = probes;
  }

  /**
   * Returns the peer that relays what this node sends to {@code owner} ({@link #relayThrough}), or
   * null when this node calls {@code owner} directly.
   */
  public String voucherOf(String owner) {
    IndirectProbes p = probes;
    return p == null ? null : p.via(owner);
  }

  /**
   * Forwards {@code request} to its owner: through the peer that reaches the owner when this node
   * does not ({@link #relayThrough}), else directly. A direct forward that fails because it found
   * the owner down is relayed if a peer may reach the owner; a relayed forward that fails waits for
   * the owner's indirect probes to reach their verdict (a round started at once when the owner's
   * voucher refused it unsent: that voucher stopped relaying), then is relayed once more if the verdict
   * names another voucher and the first relaying peer refused it before sending it on, else fails
   * (so that the caller routes it on the ring that verdict made), with the failure mode's error
   * when no peer reaches the owner and calls to it fail fast.
   */
  public CompletableFuture<RateLimitResponse> forward(String owner, RateLimitRequest request) {
    IndirectProbes p = probes;
    if (p == null) {
      return call(owner, c -> c.forward(request));
    }
    String through = p.via(owner);
    if (through != null) {
      return relayed(p, through, owner, request);
    }
    return call(owner, c -> c.forward(request))
        .exceptionallyCompose(
            error -> {
              String now = p.via(owner);
              return now == null
                  ? CompletableFuture.failedFuture(error)
                  : relayed(p, now, owner, request);
            });
  }

  /**
   * Forwards {@code requests}, all owned by {@code owner}, as {@link #forward} does each, those sent
   * directly, or relayed through the peer that reaches the owner, queued together so that they
   * leave in one batch; one future per request, in order. A client that cannot be made fails each
   * future, as {@link #call} does, rather than throwing.
   */
  public List<CompletableFuture<RateLimitResponse>> forwardAll(
      String owner, List<RateLimitRequest> requests) {
    IndirectProbes p = probes;
    String through = p == null ? null : p.via(owner);
    if (through != null) {
      return relayedAll(p, through, owner, requests);
    }
    List<CompletableFuture<RateLimitResponse>> out = new ArrayList<>(requests.size());
    List<CompletableFuture<RateLimitResponse>> direct;
    try {
      direct = callable(owner).forwardAll(requests);
    } catch (RuntimeException e) {
      PeerException failed = failure(owner, e);
      direct = new ArrayList<>(requests.size());
      for (int i = 0; i < requests.size(); i++) {
        direct.add(CompletableFuture.failedFuture(failed));
      }
    }
    if (p == null) {
      return direct;
    }
    for (int i = 0; i < requests.size(); i++) {
      RateLimitRequest r = requests.get(i);
      out.add(
          direct
              .get(i)
              .exceptionallyCompose(
                  error -> {
                    String now = p.via(owner);
                    return now == null
                        ? CompletableFuture.failedFuture(error)
                        : relayed(p, now, owner, r);
                  }));
    }
    return out;
  }

  /**
   * Hands {@code buckets}, sent by {@code from}, to {@code owner} with {@code TransferBuckets}:
   * through the peer that reaches the owner when this node does not ({@link #relayThrough}, the
   * same peer its forwarded items go through), else directly ({@link PeerClient#transferBuckets});
   * a direct transfer that fails is relayed if a peer reaches the owner by then. A relayed transfer
   * that fails (the relaying peer does not reach the owner after all, or refuses) waits for the
   * owner's indirect probes to reach their verdict, then is sent directly if no peer reaches the
   * owner any more, else fails with the relay's error. All its legs share one deadline, {@code
   * timeout} from now on the liveness's clock: each leg after the first gets what is left of it,
   * and fails at once, without calling the peer, when nothing is. The relayed transfer keeps {@code
   * from}, so the owner merges it as this node's however it came. Completes with how many buckets
   * the owner accepted.
   */
  public CompletableFuture<Integer> transferBuckets(
      String owner, List<BucketSnapshot> buckets, String from, Duration timeout) {
    IndirectProbes p = probes;
    if (p == null) {
      return call(owner, c -> c.transferBuckets(buckets, from, timeout));
    }
    Transfer transfer =
        new Transfer(p, owner, buckets, from, timeout, liveness.clock().monotonicNanos());
    String through = p.via(owner);
    if (through != null) {
      return transfer.relayed(through, timeout);
    }
    return transfer
        .direct(timeout)
        .exceptionallyCompose(
            error -> {
              String now = p.via(owner);
              return now == null
                  ? CompletableFuture.failedFuture(error)
                  : transfer.within(
                      "through '" + now + "'", error, left -> transfer.relayed(now, left));
            });
  }

  /** One {@link #transferBuckets} call: its buckets, its owner and its deadline. */
  private final class Transfer {
    private final IndirectProbes probes;
    private final String owner;
    private final List<BucketSnapshot> buckets;
    private final String from;
    private final Duration timeout;
    private final long start;

    Transfer(
        IndirectProbes probes,
        String owner,
        List<BucketSnapshot> buckets,
        String from,
        Duration timeout,
        long start) {
      this.probes = probes;
      this.owner = owner;
      this.buckets = buckets;
      this.from = from;
      this.timeout = timeout;
      this.start = start;
    }

    /**
     * Relays the buckets through {@code through} with deadline {@code left}; on failure sends them
     * directly as {@link #transferBuckets} says.
     */
    CompletableFuture<Integer> relayed(String through, Duration left) {
      return relayed(through, left, true);
    }

    /**
     * Relays the buckets through {@code through} with deadline {@code left}; on failure, once the
     * probes reached their verdict, sends them directly if no peer reaches the owner, or, if {@code
     * again} and the verdict names another voucher, relays them once more through that one.
     */
    private CompletableFuture<Integer> relayed(String through, Duration left, boolean again) {
      return call(through, c -> c.relayTransfer(owner, buckets, from, left))
          .exceptionallyCompose(
              error -> {
                if (left().compareTo(Duration.ZERO) <= 0) {
                  return CompletableFuture.failedFuture(error);
                }
                return probes
                    .settled(
                        owner,
                        UnsentRelay.unsent(error) || refusedUnsent(error) ? through : null)
                    .thenCompose(
                        v -> {
                          String now = probes.via(owner);
                          if (now == null) {
                            return within("directly", error, this::direct);
                          }
                          return again && !now.equals(through)
                              ? within(
                                  "through '" + now + "'",
                                  error,
                                  rest -> relayed(now, rest, false))
                              : CompletableFuture.<Integer>failedFuture(error);
                        });
              });
    }

    /** Sends the buckets to the owner directly with deadline {@code left}. */
    CompletableFuture<Integer> direct(Duration left) {
      return call(owner, c -> c.transferBuckets(buckets, from, left));
    }

    /**
     * Applies {@code leg} to what is left of the timeout, or fails at once, with {@code earlier} as
     * the cause, when nothing is.
     */
    CompletableFuture<Integer> within(
        String path, Throwable earlier, Function<Duration, CompletableFuture<Integer>> leg) {
      Duration left = left();
      if (left.compareTo(Duration.ZERO) > 0) {
        return leg.apply(left);
      }
      return CompletableFuture.failedFuture(
          usedUp(
              owner,
              "not handing " + buckets.size() + " bucket(s) to peer '" + owner + "' " + path,
              "the transfer's timeout",
              timeout,
              earlier));
    }

    private Duration left() {
      return leftOf(timeout, start);
    }
  }

  /**
   * Relays {@code request} through {@code through}; when that fails, waits for the verdict ({@link
   * IndirectProbes#settled(String, String)}: a new one when {@code through} is the voucher and
   * refused it unsent) and, if
   * the verdict names another voucher and nothing was sent on ({@code through} answered so, {@link
   * UnsentRelay#unsent}, or this pool refused to call it, {@link #refusedUnsent}), relays it once
   * more through that one, within what is left of the first relay's timeout. A relay that may have reached the owner is not sent again: the owner would
   * count its hits twice.
   */
  private CompletableFuture<RateLimitResponse> relayed(
      IndirectProbes p, String through, String owner, RateLimitRequest request) {
    RelayForwarder relaying = relays;
    long start = liveness.clock().monotonicNanos();
    return retried(
        p, relaying, through, owner, request, start, relaying.forward(through, owner, request));
  }

  /**
   * Relays {@code requests}, all owned by {@code owner}, through {@code through}, queued together
   * so that they leave in one batch, each retried on failure as {@link #relayed} does.
   */
  private List<CompletableFuture<RateLimitResponse>> relayedAll(
      IndirectProbes p, String through, String owner, List<RateLimitRequest> requests) {
    RelayForwarder relaying = relays;
    long start = liveness.clock().monotonicNanos();
    List<CompletableFuture<RateLimitResponse>> sent =
        relaying.forwardAll(through, owner, requests);
    List<CompletableFuture<RateLimitResponse>> out = new ArrayList<>(requests.size());
    for (int i = 0; i < requests.size(); i++) {
      out.add(retried(p, relaying, through, owner, requests.get(i), start, sent.get(i)));
    }
    return out;
  }

  /**
   * Returns {@code relay}, the relay of {@code request} through {@code through} made at {@code
   * start}, followed on failure by the verdict's retry that {@link #relayed} describes.
   */
  private CompletableFuture<RateLimitResponse> retried(
      IndirectProbes p,
      RelayForwarder relaying,
      String through,
      String owner,
      RateLimitRequest request,
      long start,
      CompletableFuture<RateLimitResponse> relay) {
    return relay.exceptionallyCompose(
        error -> {
          boolean unsent = UnsentRelay.unsent(error) || refusedUnsent(error);
          return p.settled(owner, unsent ? through : null)
              .thenCompose(
                  v -> {
                    String now = p.via(owner);
                    if (now == null) {
                      return failFast.test(owner)
                          ? call(owner, c -> c.forward(request))
                          : CompletableFuture.<RateLimitResponse>failedFuture(error);
                    }
                    if (now.equals(through) || !unsent) {
                      return CompletableFuture.<RateLimitResponse>failedFuture(error);
                    }
                    Duration left = leftOf(relaying.timeout(), start);
                    return left.compareTo(Duration.ZERO) > 0
                        ? relaying.forwardNow(now, owner, request, left)
                        : CompletableFuture.<RateLimitResponse>failedFuture(
                            usedUp(
                                owner,
                                "not relaying the item to peer '"
                                    + owner
                                    + "' through '"
                                    + now
                                    + "'",
                                "the relay's WEIR_BATCH_TIMEOUT",
                                relaying.timeout(),
                                error));
                  });
        });
  }

  /** Returns what is left of {@code timeout} since {@code start} on the liveness's clock. */
  private Duration leftOf(Duration timeout, long start) {
    return timeout.minusNanos(liveness.clock().monotonicNanos() - start);
  }

  /**
   * Returns the failure of a call to {@code owner} not made ({@code what}) because {@code budget}
   * of {@code timeout} was used up by the attempt that failed with {@code earlier}.
   */
  private static PeerException usedUp(
      String owner, String what, String budget, Duration timeout, Throwable earlier) {
    Throwable cause = Completions.cause(earlier);
    return new PeerException(
        owner,
        what
            + ": "
            + budget
            + " of "
            + timeout.toMillis()
            + " ms is used up (the attempt before failed: "
            + cause.getMessage()
            + ")",
        cause);
  }

  /**
   * Forgets the clients of peers not in {@code current} and {@linkplain PeerClient#abandon abandons}
   * them: their queued items fail (to be routed again on the new ring) instead of going to a peer
   * that left, and their calls still in flight no longer report to the liveness (a late answer
   * from a peer that left must not count as its return). The relays through or to such peers are
   * dropped too ({@link RelayForwarder#retain}).
   */
  public void retain(Collection<String> current) {
    RelayForwarder relaying = relays;
    if (relaying != null) {
      relaying.retain(current);
    }
    remove(current)
        .forEach(
            client -> {
              client.observe(PeerCallObserver.NONE);
              client.abandon();
            });
  }

  /**
   * Closes the clients of {@code members}, whose peer listeners moved to another address: their
   * queued items fail with a {@link PeerException}, and the next call to each makes a client that
   * dials the address discovery reports now.
   */
  public void renew(Collection<String> members) {
    if (members.isEmpty()) {
      return;
    }
    List<PeerClient> moved = new ArrayList<>();
    synchronized (this) {
      for (String member : members) {
        PeerClient client = clients.remove(member);
        if (client != null) {
          moved.add(client);
        }
      }
    }
    for (PeerClient client : moved) {
      client.observe(PeerCallObserver.NONE);
      client.abandon("moved its peer listener");
    }
  }

  // Under the lock get() creates under: a client created for a peer that was known then is removed
  // here, and a get() after this sees the set its caller updated before calling retain.
  private synchronized List<PeerClient> remove(Collection<String> current) {
    List<PeerClient> gone = new ArrayList<>();
    clients.entrySet()
        .removeIf(
            e -> {
              if (current.contains(e.getKey())) {
                return false;
              }
              gone.add(e.getValue());
              return true;
            });
    return gone;
  }

  /** Opens (and starts connecting) the clients of {@code addresses} that are not open yet. */
  public void connect(Collection<String> addresses) {
    if (!closed) {
      addresses.forEach(a -> call(a, c -> {
        c.connect();
        return CompletableFuture.completedFuture(null);
      }));
    }
  }

  /** Returns the clients currently open. */
  public Collection<PeerClient> clients() {
    return List.copyOf(clients.values());
  }

  /** Closes every client (their queued items are sent) and refuses to create clients from now on. */
  @Override
  public void close() {
    RelayForwarder r = relays;
    if (r != null) {
      r.close();
    }
    synchronized (this) {
      closed = true;
    }
    remove(List.of()).forEach(PeerClient::close);
  }
}
