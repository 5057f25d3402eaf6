package dev.weir.core.cluster;

import dev.weir.core.cluster.global.GlobalManager;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerException;
import dev.weir.core.cluster.ring.HashRing;
import dev.weir.core.engine.RequestValidator;
import dev.weir.core.limiter.LocalRateLimitService;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import java.time.Duration;
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
 * The ring holds only the peers this node finds answering ({@link Membership}), so an owner found
 * down is not chosen and a forward that finds it down is routed again.
 *
 * <p>Stand-ins: with {@code standInAfter} set, the items of a call whose owners have not answered
 * that long after the call (an owner in a long GC pause, or one that died and is not yet found
 * down) are answered by this node ({@link StandIns}: from what the owner's last answer for the key
 * left, else from a bucket of its own), with {@code metadata.stand_in = "true"}: the limit is still
 * enforced, by this node, rather than the caller timing out (Envoy then lets the request through).
 * The owner's late answer is dropped from the call; the owner counted the hits all the same. With
 * stand-ins on, an item whose forward fails (the owner answers the call with an error status, for
 * instance refusing this node's credentials, and the ring names no other owner) is answered by a
 * stand-in at once rather than with the error.
 */
public final class ClusterRateLimitService implements RateLimitService {

  /** How many times one item is routed before its error is returned. */
  public static final int MAX_ATTEMPTS = 3;

  /** The prefix of the name under which this node keeps its stand-in bucket of a key. */
  public static final String STAND_IN_PREFIX = StandIns.PREFIX;

  private final String self;
  private final Supplier<HashRing> ring;
  private final LocalCheck local;
  private final PeerClientPool peers;
  private final GlobalManager global;
  private final Clock clock;
  private final Scheduler scheduler;
  private final Duration standInAfter;
  private final StandIns standIns;
  private volatile WeirMetrics metrics = WeirMetrics.NOOP;

  /**
   * Creates the service of node {@code self}.
   *
   * @param self this node's advertised gRPC address
   * @param ring the current ring
   * @param local evaluates requests this node answers itself
   * @param peers clients of the other nodes
   * @param global the GLOBAL queues
   * @param clock the source of {@code created_at} when a request has none
   * @param scheduler times the stand-ins; may be null when {@code standInAfter} is zero
   * @param standInAfter how long forwarded items wait for their owners before this node answers
   *     them itself ({@link StandIns}); zero: until the owner answers or the call's deadline
   */
  public ClusterRateLimitService(
      String self,
      Supplier<HashRing> ring,
      LocalCheck local,
      PeerClientPool peers,
      GlobalManager global,
      Clock clock,
      Scheduler scheduler,
      Duration standInAfter) {
    if (!standInAfter.isZero() && scheduler == null) {
      throw new IllegalArgumentException("stand-ins need a scheduler");
    }
    this.self = self;
    this.ring = ring;
    this.local = local;
    this.peers = peers;
    this.global = global;
    this.clock = clock;
    this.scheduler = scheduler;
    this.standInAfter = standInAfter;
    this.standIns = standInAfter.isZero() ? null : new StandIns(local);
  }

  /** Counts this service's stand-in answers in {@code sink}. */
  public void reportTo(WeirMetrics sink) {
    this.metrics = sink;
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
    RateLimitRequest[] sent = null;
    List<CompletableFuture<RateLimitResponse>> routed = null;
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
          sent = new RateLimitRequest[n];
          routed = new ArrayList<>();
        }
        int index = i;
        CompletableFuture<RateLimitResponse> answer = forward(r);
        sent[i] = r;
        routed.add(answer);
        forwarded[i] = answer.thenAccept(a -> answers[index] = a);
      }
    }
    if (forwarded == null) {
      return CompletableFuture.completedFuture(Arrays.asList(answers));
    }
    if (standIns != null) {
      armStandIns(sent, routed);
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
   * Answers, {@link #standInAfter} from now, each of the {@code routed} items (the non-null entries
   * of {@code sent}, in order) still waiting for its owner, as a stand-in ({@link StandIns}).
   */
  private void armStandIns(
      RateLimitRequest[] sent, List<CompletableFuture<RateLimitResponse>> routed) {
    Scheduler.Task timer =
        scheduler.schedule(
            () -> {
              int next = 0;
              for (RateLimitRequest r : sent) {
                if (r != null) {
                  CompletableFuture<RateLimitResponse> waiting = routed.get(next++);
                  if (!waiting.isDone() && waiting.complete(standIn(r))) {
                    metrics.standIn();
                  }
                }
              }
            },
            standInAfter);
    CompletableFuture.allOf(routed.toArray(new CompletableFuture<?>[0]))
        .whenComplete((v, e) -> timer.cancel());
  }

  /**
   * Routes {@code r} to its owner; with stand-ins on, an item no owner answered (the route's null)
   * is answered by a stand-in, unless the stand-in timer answered it first.
   */
  private CompletableFuture<RateLimitResponse> forward(RateLimitRequest r) {
    CompletableFuture<RateLimitResponse> routed = route(r, 1);
    if (standIns == null) {
      return routed;
    }
    return routed.thenApply(
        answer -> {
          if (answer != null) {
            return answer;
          }
          metrics.standIn();
          return standIn(r);
        });
  }

  /** Returns this node's own answer to {@code r}, standing in for the key's owner. */
  private RateLimitResponse standIn(RateLimitRequest r) {
    HashRing current = ring.get();
    String owner = current.isEmpty() ? "" : current.ownerOf(r.hashKey());
    return standIns.answer(r, Map.of("owner", owner, "stand_in", "true"));
  }

  /**
   * Returns the answer to {@code r} when this node gives it without a peer call on {@code current}:
   * it owns the key, the request is GLOBAL, or the ring is empty (this node left and every other
   * member is down: no owner is left to ask, and an error would let the request through); null
   * when the owner is another peer.
   */
  private RateLimitResponse answerHere(HashRing current, RateLimitRequest r) {
    if (current.isEmpty()) {
      return local.check(r);
    }
    String owner = current.ownerOf(r.hashKey());
    if (owner.equals(self)) {
      RateLimitResponse answer = local.check(r);
      if (r.has(Behavior.GLOBAL)) {
        global.queueBroadcast(r);
      }
      return answer;
    }
    if (r.has(Behavior.GLOBAL)) {
      RateLimitResponse answer = local.check(r);
      global.queueHits(hitsForOwner(r));
      return answer.withMetadata(Map.of("owner", owner));
    }
    return null;
  }

  /**
   * Returns the GLOBAL item {@code r} as its hits are queued for the owner, where they merge with
   * other callers' hits to the same key: with only the flags an owner knows, and created now
   * (this node's time; the caller's {@code created_at} decided the local answer), so that no
   * caller's item makes the owner refuse the merged hits of everyone (the owner refuses flags it
   * does not know and a {@code created_at} far from its clock).
   */
  private RateLimitRequest hitsForOwner(RateLimitRequest r) {
    return r.withBehavior(r.behavior() & Behavior.KNOWN).withCreatedAt(clock.wallMillis());
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

  private CompletableFuture<RateLimitResponse> route(RateLimitRequest r, int attempt) {
    HashRing current = ring.get();
    RateLimitResponse here = answerHere(current, r);
    if (here != null) {
      return CompletableFuture.completedFuture(here);
    }
    String owner = current.ownerOf(r.hashKey());
    Map<String, String> ownerMeta = Map.of("owner", owner);
    return peers
        .forward(owner, r)
        .handle(
            (answer, error) -> {
              if (error == null) {
                if (standIns != null) {
                  standIns.ownerAnswered(r, answer);
                }
                return CompletableFuture.completedFuture(answer.withMetadata(ownerMeta));
              }
              HashRing now = ring.get();
              String nowOwner = now.isEmpty() ? owner : now.ownerOf(r.hashKey());
              if (!nowOwner.equals(owner) && attempt < MAX_ATTEMPTS) {
                return route(r, attempt + 1);
              }
              if (standIns != null) {
                return CompletableFuture.<RateLimitResponse>completedFuture(null);
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
