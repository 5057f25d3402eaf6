package dev.weir.core.cluster;

import dev.weir.core.cluster.global.GlobalManager;
import dev.weir.core.cluster.peer.EncodedMetadata;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.cluster.peer.PeerException;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.engine.RequestValidator;
import dev.weir.core.limiter.BucketCheck;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import dev.weir.core.tracing.ClusterTracing;
import dev.weir.core.tracing.GuardedTracing;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The cluster's request path: answers each item where its bucket lives and reassembles the answers in
 * request order.
 *
 * <p>Design: each item is validated (a {@code created_at} set further than {@link
 * PeerInputValidator#MAX_CLIENT_CLOCK_SKEW} from this node's clock is an error, within the {@link
 * PeerInputValidator#MAX_CLOCK_SKEW} a peer allows by {@link
 * PeerInputValidator#NODE_CLOCK_ALLOWANCE}, so that an item is answered alike whichever node is
 * asked, while the nodes' clocks differ by no more, and the state it makes reaches every node),
 * gets {@code created_at} (now, when unset) and reads the ring once.
 * The owner answers locally; a GLOBAL item on a non-owner is answered at once from the local copy and
 * its hits are queued for the owner; any other item is forwarded to the owner through its peer client
 * (batched unless NO_BATCHING or batching is off; a call's items for one owner are queued together,
 * so they leave in one batch) and its answer carries {@code metadata.owner}. When a
 * forward fails and the ring now names another owner (the ring changed while the call was in flight),
 * the item is routed again, up to {@link #MAX_ATTEMPTS} times, locally if this node became the owner;
 * otherwise the item's error names the peer. Each peer call has a deadline, so no sent item waits past it.
 * The ring holds the peers this node finds answering, directly or through a peer that vouches for
 * them ({@link Membership}, {@code IndirectProbes}: items for an owner only another peer reaches are
 * relayed through that peer), so an owner found down is not chosen and a forward that finds it down
 * is routed again.
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

  /** The most owners whose answer metadata is kept encoded: far more than a cluster's peers. */
  static final int MAX_OWNERS_KEPT = 1024;

  private final String self;
  private final Supplier<HashRing> ring;
  private final BucketCheck local;
  private final PeerClientPool peers;
  private final GlobalManager global;
  private final Clock clock;
  private final Scheduler scheduler;
  private final Duration standInAfter;
  private final StandIns standIns;
  private final Map<String, EncodedMetadata> ownerMetadata = new ConcurrentHashMap<>();
  private volatile WeirMetrics metrics = WeirMetrics.NOOP;
  private volatile ClusterTracing tracing = ClusterTracing.NONE;

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
      BucketCheck local,
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
   * Traces forwards and owner decisions with {@code value} (default {@link ClusterTracing#NONE}),
   * {@linkplain GuardedTracing guarded} so that a failing tracer never costs an answer.
   */
  public void traceWith(ClusterTracing value) {
    this.tracing = GuardedTracing.of(value);
  }

  /**
   * {@inheritDoc}
   *
   * <p>The future is already complete when every item was answered on this node (owned here, GLOBAL,
   * or invalid), so a caller can answer on the calling thread.
   */
  @Override
  public CompletableFuture<List<RateLimitResponse>> decide(List<RateLimitRequest> requests) {
    int n = requests.size();
    if (RateLimitService.tooManyItems(n)) {
      return CompletableFuture.failedFuture(RequestTooLargeException.overBatchSize());
    }
    RateLimitResponse[] answers = new RateLimitResponse[n];
    RateLimitRequest[] sent = null;
    String[] owners = null;
    int forwarded = 0;
    HashRing current = ring.get();
    long now = 0;
    for (int i = 0; i < n; i++) {
      RateLimitRequest r = requests.get(i);
      String invalid = validate(r);
      if (invalid == null && r.createdAt() != 0) {
        now = now == 0 ? clock.wallMillis() : now;
        invalid = PeerInputValidator.checkClientCreatedAt(r.createdAt(), now).orElse(null);
      }
      if (invalid != null) {
        answers[i] = RateLimitResponse.error(invalid);
        continue;
      }
      if (r.createdAt() == 0) {
        now = now == 0 ? clock.wallMillis() : now;
        r = r.withCreatedAt(now);
      }
      if (!r.metadata().isEmpty()
          && (r.metadata().containsKey(PeerProtos.HANDED_ON)
              || r.metadata().containsKey(PeerProtos.RELAYED)
              || r.metadata().containsKey(PeerProtos.QUEUED_BY))) {
        r = withoutPeerMark(r);
      }
      String owner = current.isEmpty() ? self : current.ownerOf(r.hashKey());
      RateLimitResponse local = answerHere(owner, r);
      if (local != null) {
        answers[i] = local;
      } else {
        if (sent == null) {
          sent = new RateLimitRequest[n];
          owners = new String[n];
        }
        sent[i] = (r.behavior() & ~Behavior.KNOWN) == 0 ? r : knownFlagsOnly(r);
        owners[i] = owner;
        forwarded++;
      }
    }
    if (forwarded == 0) {
      return CompletableFuture.completedFuture(Arrays.asList(answers));
    }
    return forward(sent, owners, forwarded, answers);
  }

  /**
   * Sends the items of {@code sent} (the non-null entries, {@code count} of them) to their {@code
   * owners}, each owner's items together so that they leave in one batch, and completes with
   * {@code answers} once every one has its answer.
   */
  private CompletableFuture<List<RateLimitResponse>> forward(
      RateLimitRequest[] sent, String[] owners, int count, RateLimitResponse[] answers) {
    CompletableFuture<List<RateLimitResponse>> all = new CompletableFuture<>();
    AtomicInteger remaining = new AtomicInteger(count);
    @SuppressWarnings("unchecked")
    Consumer<RateLimitResponse>[] gatherers =
        standIns == null ? null : new Consumer[sent.length];
    AtomicBoolean[] claims = standIns == null ? null : new AtomicBoolean[sent.length];
    long[] tickets = standIns == null ? null : new long[sent.length];
    boolean[] grouped = new boolean[sent.length];
    List<RateLimitRequest> group = new ArrayList<>(count);
    int[] positions = new int[count];
    for (int i = 0; i < sent.length; i++) {
      if (sent[i] == null || grouped[i]) {
        continue;
      }
      String owner = owners[i];
      group.clear();
      int size = 0;
      for (int j = i; j < sent.length; j++) {
        if (sent[j] != null && !grouped[j] && owners[j].equals(owner)) {
          grouped[j] = true;
          group.add(sent[j]);
          positions[size++] = j;
        }
      }
      if (tickets != null) {
        for (int k = 0; k < size; k++) {
          tickets[positions[k]] = standIns.sending();
        }
      }
      ClusterTracing.Forward span = tracing.forward(owner, group);
      List<RateLimitRequest> traced = span.items(group);
      List<CompletableFuture<RateLimitResponse>> calls = peers.forwardAll(owner, traced);
      Map<String, String> ownerMeta = ownerMetadata(owner);
      for (int k = 0; k < size; k++) {
        int index = positions[k];
        Consumer<RateLimitResponse> gathered =
            a -> {
              answers[index] = a;
              span.answered(a);
              if (remaining.decrementAndGet() == 0) {
                all.complete(Arrays.asList(answers));
              }
            };
        if (claims != null) {
          // A stand-in's timer and the owner's answer race for the item: the first to claim it
          // answers, and a stand-in is computed (charged) only once claimed.
          gatherers[index] = gathered;
          claims[index] = new AtomicBoolean();
        }
        settle(
            sent[index],
            tickets == null ? 0 : tickets[index],
            traced.get(k),
            owner,
            ownerMeta,
            1,
            calls.get(k),
            gathered,
            claims == null ? null : claims[index]);
      }
    }
    if (claims != null) {
      armStandIns(sent, tickets, gatherers, claims, all);
    }
    return all;
  }

  /**
   * Answers, {@link #standInAfter} from now, each forwarded item ({@code sent[i]} non-null, its
   * answer taken by {@code gatherers[i]}, its forward's ticket {@code tickets[i]}) that no answer
   * has claimed ({@code claims[i]}), as a stand-in ({@link StandIns}); the timer is cancelled once
   * {@code all} items are answered.
   */
  private void armStandIns(
      RateLimitRequest[] sent,
      long[] tickets,
      Consumer<RateLimitResponse>[] gatherers,
      AtomicBoolean[] claims,
      CompletableFuture<?> all) {
    Scheduler.Task timer =
        scheduler.schedule(
            () -> {
              int answered = 0;
              for (int i = 0; i < sent.length; i++) {
                if (claims[i] != null && claims[i].compareAndSet(false, true)) {
                  RateLimitRequest r = sent[i];
                  long ticket = tickets[i];
                  gatherers[i].accept(orError(r, () -> standIn(ticket, r)));
                  answered++;
                }
              }
              for (int i = 0; i < answered; i++) {
                metrics.standIn();
              }
            },
            standInAfter);
    all.whenComplete((v, e) -> timer.cancel());
  }

  /**
   * Returns this node's own answer to {@code r}, whose forward has {@code ticket}, standing in for
   * the key's owner.
   */
  private RateLimitResponse standIn(long ticket, RateLimitRequest r) {
    HashRing current = ring.get();
    String owner = current.isEmpty() ? "" : current.ownerOf(r.hashKey());
    return standIns.answer(ticket, r, Map.of("owner", owner, "stand_in", "true"));
  }

  /**
   * Returns the answer to {@code r} when this node gives it without a peer call, {@code owner}
   * being the key's owner on the ring read for it (this node when the ring is empty: it left and
   * every other member is down, so no owner is left to ask, and an error would let the request
   * through): this node owns the key or the request is GLOBAL; null when another peer must answer.
   */
  private RateLimitResponse answerHere(String owner, RateLimitRequest r) {
    if (owner.equals(self)) {
      RateLimitResponse answer = local.decide(r);
      if (r.has(Behavior.GLOBAL)) {
        global.queueBroadcast(r);
      }
      return answer;
    }
    if (r.has(Behavior.GLOBAL)) {
      return global.answerFromCopy(r, hitsForOwner(r)).withMetadata(ownerMetadata(owner));
    }
    return null;
  }

  /**
   * Returns {@code r} without {@link PeerProtos#HANDED_ON}, {@link PeerProtos#RELAYED} and {@link
   * PeerProtos#QUEUED_BY}, the metadata keys a peer marks a handed-on, relayed or queued item with:
   * from a caller the first two would make an owner whose ring is behind answer the item on its
   * stale copy instead of handing it on, and the last would make the node it names skip the item's
   * hits when they are handed on to it.
   */
  private static RateLimitRequest withoutPeerMark(RateLimitRequest r) {
    Map<String, String> kept = new LinkedHashMap<>(r.metadata());
    kept.remove(PeerProtos.HANDED_ON);
    kept.remove(PeerProtos.RELAYED);
    kept.remove(PeerProtos.QUEUED_BY);
    return r.withMetadata(kept);
  }

  /**
   * Returns {@code r} with only the behavior flags an owner knows: a caller's other bits are
   * ignored wherever the key is decided, and an owner refuses them from a peer.
   */
  private static RateLimitRequest knownFlagsOnly(RateLimitRequest r) {
    return r.withBehavior(r.behavior() & Behavior.KNOWN);
  }

  /**
   * Returns the GLOBAL item {@code r} as its hits are queued for the owner, where they merge with
   * other callers' hits to the same key: with only the flags an owner knows, and created now
   * (this node's time; the caller's {@code created_at} decided the local answer), so that no
   * caller's item makes the owner refuse the merged hits of everyone (the owner refuses flags it
   * does not know and a {@code created_at} far from its clock); of its metadata only the {@code
   * time_zone} entry, which decides a Gregorian window: a caller's {@code traceparent} would start
   * a decision span on the owner under that caller's trace, sampled or not, for everyone's hits.
   */
  private RateLimitRequest hitsForOwner(RateLimitRequest r) {
    RateLimitRequest hits = knownFlagsOnly(r).withCreatedAt(clock.wallMillis());
    if (r.metadata().isEmpty()) {
      return hits;
    }
    String zone = r.metadata().get(GregorianInterval.TIME_ZONE_METADATA);
    return hits.withMetadata(
        zone == null ? Map.of() : Map.of(GregorianInterval.TIME_ZONE_METADATA, zone));
  }

  /**
   * Evaluates {@code requests} as their owner, as a peer asked: GLOBAL items are hits aggregated by a
   * non-owner and are applied with DRAIN_OVER_LIMIT, then broadcast.
   */
  public List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests) {
    List<RateLimitResponse> out = new ArrayList<>(requests.size());
    ClusterTracing traced = tracing;
    for (RateLimitRequest r : requests) {
      ClusterTracing.Span span = traced.decide(r);
      RateLimitResponse answer = decideOneAsOwner(r);
      span.end(answer);
      out.add(answer);
    }
    return out;
  }

  /**
   * Evaluates {@code requests}, items a peer forwarded to this node as their owner whose hand-on to
   * {@code handedTo}, their owner on this node's ring, failed with {@code error} ({@link
   * dev.weir.core.cluster.handoff.HandOn}), as {@link #decideAsOwner} does, except the GLOBAL items
   * of a key another node owns: hits a non-owner summed, whose broadcast from this node's copy would
   * not be sent. They are applied to the copy and, as this node's own GLOBAL hits after a failed
   * send ({@link GlobalManager}), queued for the key's owner when {@code handedTo} will not apply
   * them late (the hand-on was refused before it was sent, or {@code handedTo} has left the ring),
   * else dropped, logged and counted in {@link GlobalManager#droppedHits}; hits the key's owner
   * queued itself ({@link PeerProtos#QUEUED_BY}) are neither: its copy, which holds them, is its
   * bucket. An item whose answer throws gets its error ({@link RateLimitResponse#answerFailed}),
   * the others their answers.
   */
  public List<RateLimitResponse> decideAsFormerOwner(
      List<RateLimitRequest> requests, String handedTo, Throwable error) {
    HashRing current = ring.get();
    List<RateLimitResponse> out = new ArrayList<>(requests.size());
    ClusterTracing traced = tracing;
    Boolean resend = null;
    int dropped = 0;
    for (RateLimitRequest r : requests) {
      ClusterTracing.Span span = traced.decide(r);
      RateLimitResponse answer;
      try {
        String owner =
            current.isEmpty() || !r.has(Behavior.GLOBAL) ? self : current.ownerOf(r.hashKey());
        if (owner.equals(self) || validate(r) != null) {
          answer = decideOneAsOwner(r);
        } else {
          RateLimitRequest req = withCreatedAt(r);
          RateLimitRequest drained = req.withBehavior(req.behavior() | Behavior.DRAIN_OVER_LIMIT);
          if (owner.equals(r.metadata().get(PeerProtos.QUEUED_BY))) {
            answer = global.answerFromCopy(drained);
          } else {
            resend = resend == null ? global.mayResend(handedTo, error) : resend;
            answer =
                resend
                    ? global.answerFromCopy(drained, hitsForOwner(req), 1)
                    : global.answerFromCopy(drained);
            dropped += resend ? 0 : 1;
          }
          answer = answer.withMetadata(ownerMetadata(owner));
        }
      } catch (RuntimeException e) {
        answer = RateLimitResponse.answerFailed(r, e);
      }
      span.end(answer);
      out.add(answer);
    }
    if (dropped > 0) {
      global.droppedHandOn(dropped, handedTo, error);
    }
    return out;
  }

  /**
   * Returns the answer to {@code r} as its owner: GLOBAL hits are applied with DRAIN_OVER_LIMIT and
   * queued for broadcast, except this node's own ({@link #queuedHere}), which are only broadcast.
   */
  private RateLimitResponse decideOneAsOwner(RateLimitRequest r) {
    String invalid = validate(r);
    if (invalid != null) {
      return RateLimitResponse.error(invalid);
    }
    RateLimitRequest req = withCreatedAt(r);
    if (req.has(Behavior.GLOBAL)) {
      req = req.withBehavior(req.behavior() | Behavior.DRAIN_OVER_LIMIT);
      RateLimitResponse answer =
          queuedHere(req)
              ? local.decide(
                  req.withHits(0).withBehavior(req.behavior() & ~Behavior.RESET_REMAINING))
              : local.decide(req);
      global.queueBroadcast(req);
      return answer;
    }
    return local.decide(req);
  }

  /**
   * Returns whether the GLOBAL item {@code r} holds hits this node queued for another owner,
   * answering from its copy, that the owner handed on back to it ({@link PeerProtos#QUEUED_BY}
   * this node, {@link PeerProtos#HANDED_ON} another): the copy holds them already, and is this
   * node's bucket once its ring gives it the key.
   */
  private boolean queuedHere(RateLimitRequest r) {
    Map<String, String> metadata = r.metadata();
    if (metadata.isEmpty() || !self.equals(metadata.get(PeerProtos.QUEUED_BY))) {
      return false;
    }
    String handedOn = metadata.get(PeerProtos.HANDED_ON);
    return handedOn != null && !handedOn.equals(self);
  }

  /**
   * Gives {@code answer} what became of {@code r}'s forward to {@code owner} (with stand-ins on,
   * {@code ticket} is the forward's, from {@link StandIns#sending()}), attempt {@code attempt}, where {@code traced} is {@code r} as the forward's span sent it: the owner's answer,
   * with {@code ownerMeta} unless it names its own owner (the node a stale owner handed it on to);
   * when the forward failed and the ring now names another owner (it changed while the call was in
   * flight), the answer of {@code traced} routed again, up to {@link #MAX_ATTEMPTS} times; else a
   * stand-in's answer when stand-ins are on, else the error naming the peer. With stand-ins on,
   * {@code claimed} is the item's claim, which the stand-in timer races for: an answer is given
   * (and a stand-in computed) only by whoever claims it first.
   */
  private void settle(
      RateLimitRequest r,
      long ticket,
      RateLimitRequest traced,
      String owner,
      Map<String, String> ownerMeta,
      int attempt,
      CompletableFuture<RateLimitResponse> call,
      Consumer<RateLimitResponse> answer,
      AtomicBoolean claimed) {
    call.whenComplete(
        (a, error) -> {
          if (error == null) {
            if (standIns != null) {
              standIns.ownerAnswered(ticket, r, a);
            }
            if (claimed == null || claimed.compareAndSet(false, true)) {
              answer.accept(
                  a.metadata().isEmpty() || !a.metadata().containsKey("owner")
                      ? a.withMetadata(ownerMeta)
                      : a);
            }
            return;
          }
          HashRing now = ring.get();
          String nowOwner = now.isEmpty() ? self : now.ownerOf(r.hashKey());
          if (!nowOwner.equals(owner) && attempt < MAX_ATTEMPTS) {
            RateLimitResponse here = orError(r, () -> answerHere(nowOwner, r));
            if (here != null) {
              if (claimed == null || claimed.compareAndSet(false, true)) {
                answer.accept(here);
              }
            } else {
              settle(
                  r,
                  ticket,
                  traced,
                  nowOwner,
                  Map.of("owner", nowOwner),
                  attempt + 1,
                  peers.forward(nowOwner, traced),
                  answer,
                  claimed);
            }
            return;
          }
          if (standIns != null) {
            if (claimed.compareAndSet(false, true)) {
              answer.accept(orError(r, () -> standIn(ticket, r)));
              metrics.standIn();
            }
            return;
          }
          answer.accept(
              RateLimitResponse.error(forwardError(owner, error)).withMetadata(ownerMeta));
        });
  }

  /**
   * Returns {@code answer}'s answer to {@code r}, or {@code r}'s error naming the failure when it
   * throws: these answers are given in callbacks, where an exception would leave the item
   * unanswered until the caller's deadline.
   */
  private static RateLimitResponse orError(
      RateLimitRequest r, Supplier<RateLimitResponse> answer) {
    try {
      return answer.get();
    } catch (RuntimeException e) {
      return RateLimitResponse.answerFailed(r, e);
    }
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

  /**
   * Returns the metadata {@code owner=<owner>} of an answer {@code owner} gave, encoded once for all
   * its answers; the cache forgets every owner when it holds more than {@link #MAX_OWNERS_KEPT}
   * (peers come and go over a cluster's life).
   */
  private Map<String, String> ownerMetadata(String owner) {
    EncodedMetadata metadata = ownerMetadata.get(owner);
    if (metadata == null) {
      if (ownerMetadata.size() >= MAX_OWNERS_KEPT) {
        ownerMetadata.clear();
      }
      metadata = EncodedMetadata.of(Map.of("owner", owner));
      ownerMetadata.put(owner, metadata);
    }
    return metadata;
  }

  private RateLimitRequest withCreatedAt(RateLimitRequest r) {
    return r.createdAt() == 0 ? r.withCreatedAt(clock.wallMillis()) : r;
  }

  private static String validate(RateLimitRequest r) {
    return RequestValidator.validate(r).orElse(null);
  }
}
