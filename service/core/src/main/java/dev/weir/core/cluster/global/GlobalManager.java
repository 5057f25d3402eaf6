package dev.weir.core.cluster.global;

import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.engine.SaturatingMath;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.limiter.BucketCheck;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import dev.weir.proto.gubernator.Algorithm;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The GLOBAL behavior: non-owners answer from their own copy and send the hits to the owner later;
 * the owner applies them and broadcasts the resulting state to every other peer.
 *
 * <p>Design (Gubernator 2.19, reference §3.4): two queues keyed by hash key, each flushed {@code
 * syncWait} after its first entry or as soon as it holds {@code batchLimit} keys. The hits queue
 * (on non-owners) sums the hits of each key into the first request, kept whole otherwise; a
 * RESET_REMAINING replaces what is queued for its key, and the hits after it are summed apart, so
 * that the owner applies the reset before them (Gubernator ORs the flag into the sum, which erases
 * hits taken after the reset). At flush each key goes to its owner on the ring of that moment as
 * GLOBAL items marked {@link PeerProtos#QUEUED_BY} this node, which the owner applies with
 * DRAIN_OVER_LIMIT: its reset if one is queued, else its sum (an owner whose ring has moved on
 * hands them on, and the node they come back to, whose copy holds them, does not apply them
 * again). What must follow a call still out stays queued, held back, until that call ends, and
 * then goes at once: the hits of a key whose reset is out, and a reset of a key whose earlier hits are
 * out; so no sum overtakes its reset nor a reset the hits taken before it, and no flush waits for
 * another. When this node has become the owner meanwhile, its copy holds those hits (they were
 * applied to it when answered, and again on each broadcast it took since; a hand-off merge that
 * kept the previous owner's larger state is the exception) and is now the owner's bucket: the hits
 * are not applied again, only broadcast. A received broadcast for a key this node owns on the
 * current ring (a late one from the previous owner) is ignored; any other overwrites the copy, and
 * the hits still queued for that key are applied to the new copy, so that the copy keeps counting
 * them until the owner's next broadcast does (an answer from the copy and a broadcast replacing it
 * are serialised per key, so the queued hits are applied exactly once). The broadcast queue (on the
 * owner) holds the last request of each key hit; at flush the owner reads each key with hits 0 and
 * sends {@code UpdatePeerGlobals} to every other peer, created at this node's time of the flush (a
 * caller's {@code created_at}, up to the skew a receiver allows away and older by the wait, would
 * make the receivers refuse the update). Both queues go out in calls of at most 1000
 * keys, the most a peer accepts. Hits whose call failed go again with the next sync, to the owner
 * of then ({@value #MAX_SENDS} sends in all, counted from the newest hits summed with them), only
 * when that owner will not apply them late: the call was refused before it was sent, or the owner
 * has left the ring (hits it applied just before it went then count twice); otherwise they are
 * dropped ({@link #droppedHits}), at most once as in Gubernator, since a call that timed out may
 * have been applied; items the owner answers with an error are dropped and counted too. Beyond
 * Gubernator, each update carries the exact bucket state ({@code weir_state}), so receivers copy any algorithm exactly and
 * report the same {@code reset_time}; an update without it (from a Gubernator peer) is rebuilt as
 * Gubernator does.
 */
public final class GlobalManager implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(GlobalManager.class);

  /** The most sends of one key's queued hits: the first and the resends after failed calls. */
  static final int MAX_SENDS = 3;

  private final String self;
  private final Map<String, String> queuedBySelf;
  private final Supplier<HashRing> ring;
  private final PeerClientPool peers;
  private final BucketCheck local;
  private final BucketStore store;
  private final Scheduler scheduler;
  private final Clock clock;
  private final RateLimitedLogger warnings;
  private final Duration syncWait;
  private final int batchLimit;
  private final Duration timeout;

  private final Object lock = new Object();
  private volatile WeirMetrics metrics = WeirMetrics.NOOP;
  private Map<String, Queued> hits = new LinkedHashMap<>();
  private Map<String, RateLimitRequest> broadcasts = new LinkedHashMap<>();
  private Scheduler.Task hitsTimer;
  private Scheduler.Task broadcastTimer;
  private volatile CopyWrites copyWrites = (key, ownersState) -> {};
  // Guarded by lock: the queued hits held back until the calls they must follow have ended.
  private final Map<String, Queued> held = new LinkedHashMap<>();
  // Guarded by lock: per hash key, the items out (sent and not ended), and the resets among them.
  private final Map<String, Integer> itemsOut = new HashMap<>();
  private final Map<String, Integer> resetsOut = new HashMap<>();
  // Guarded by lock: the sends whose calls have not all ended.
  private final Set<CompletableFuture<Void>> flushesOut = new HashSet<>();
  // Guarded by lock: per key held back (or released and not sent yet), completes when the call
  // that carries its items has ended.
  private final Map<String, CompletableFuture<Void>> heldSent = new HashMap<>();
  private final AtomicLong dropped = new AtomicLong();
  // A copy's write and what goes with it (its queued hits) happen under the key's stripe.
  private final Object[] stripes = new Object[64];

  /**
   * Creates the manager.
   *
   * @param self this node's advertised address
   * @param ring the current ring
   * @param peers clients of the other nodes
   * @param local evaluates a request on this node's copy
   * @param store this node's buckets, read for broadcasts and overwritten by received ones
   * @param scheduler runs the sync timers
   * @param clock the time of broadcasts, of received Gubernator-style updates and of the warnings'
   *     throttle
   * @param syncWait how long queued hits and broadcasts wait
   * @param batchLimit the number of queued keys that flushes at once
   * @param timeout the deadline of each call
   */
  public GlobalManager(
      String self,
      Supplier<HashRing> ring,
      PeerClientPool peers,
      BucketCheck local,
      BucketStore store,
      Scheduler scheduler,
      Clock clock,
      Duration syncWait,
      int batchLimit,
      Duration timeout) {
    this.self = self;
    this.queuedBySelf = Map.of(PeerProtos.QUEUED_BY, self);
    this.ring = ring;
    this.peers = peers;
    this.local = local;
    this.store = store;
    this.scheduler = scheduler;
    this.clock = clock;
    this.warnings = new RateLimitedLogger(LOG, clock, RateLimitedLogger.DEFAULT_INTERVAL);
    this.syncWait = syncWait;
    this.batchLimit = batchLimit;
    this.timeout = timeout;
    for (int i = 0; i < stripes.length; i++) {
      stripes[i] = new Object();
    }
  }

  /** Is told of each write to this node's copy of a GLOBAL bucket it does not own. */
  @FunctionalInterface
  public interface CopyWrites {

    /**
     * Called just before the copy of {@code hashKey} is written: with {@code ownersState} true when
     * the owner's broadcast replaces it, false when this node answers from it.
     */
    void writing(String hashKey, boolean ownersState);
  }

  /**
   * Reports this manager's queue lengths, its {@linkplain #droppedHits dropped items} and the
   * duration and outcome of each send and broadcast to {@code sink}.
   */
  public void reportTo(WeirMetrics sink) {
    this.metrics = sink;
    sink.watchGlobalQueues(this::queuedHits, this::queuedBroadcasts);
    sink.watchGlobalDropped(this::droppedHits);
  }

  /** Returns how many GLOBAL keys have hits waiting for their owners. */
  public long queuedHits() {
    synchronized (lock) {
      return hits.size() + held.size();
    }
  }

  /**
   * Returns how many GLOBAL items (the summed hits or the reset of one key) this node has dropped
   * without the owner confirming them: their send failed where the owner may have applied them, or
   * failed {@value #MAX_SENDS} times, or found no owner (empty ring), or the owner answered them
   * with an error.
   */
  public long droppedHits() {
    return dropped.get();
  }

  /** Returns how many GLOBAL keys wait to be broadcast. */
  public long queuedBroadcasts() {
    synchronized (lock) {
      return broadcasts.size();
    }
  }

  /**
   * Tells {@code listener} of each write to the copy of a GLOBAL bucket this node does not own,
   * just before it happens: when this node answers from it, and when the owner's broadcast replaces
   * it.
   */
  public void reportCopyWritesTo(CopyWrites listener) {
    this.copyWrites = listener;
  }

  /**
   * Answers the GLOBAL {@code request}, whose key another node owns, from this node's copy, and
   * queues {@code forOwner} (the same hits as the owner should receive them) for that owner.
   */
  public RateLimitResponse answerFromCopy(RateLimitRequest request, RateLimitRequest forOwner) {
    return answerFromCopy(request, forOwner, 0);
  }

  /**
   * Answers {@code request} as {@link #answerFromCopy(RateLimitRequest, RateLimitRequest)} does,
   * queueing {@code forOwner} as hits sent {@code sent} times before (a failed hand-on of GLOBAL
   * hits is their first send), which the {@value #MAX_SENDS} sends of queued hits count.
   */
  public RateLimitResponse answerFromCopy(
      RateLimitRequest request, RateLimitRequest forOwner, int sent) {
    String key = request.hashKey();
    RateLimitResponse answer;
    boolean flushNow;
    synchronized (stripe(key)) {
      copyWrites.writing(key, false);
      answer = local.decide(request);
      flushNow = enqueue(forOwner, sent);
    }
    if (flushNow) {
      flushHits();
    }
    return answer;
  }

  /**
   * Answers the GLOBAL {@code request}, whose key another node owns, from this node's copy, queueing
   * nothing for the owner (its hits are {@linkplain #droppedHandOn dropped}).
   */
  public RateLimitResponse answerFromCopy(RateLimitRequest request) {
    String key = request.hashKey();
    synchronized (stripe(key)) {
      copyWrites.writing(key, false);
      return local.decide(request);
    }
  }

  /**
   * Tells whether GLOBAL hits whose call to {@code owner} failed with {@code error} may be sent
   * again: the call was refused before it was sent, or {@code owner} is no longer on the ring, so it
   * will not apply them late.
   */
  public boolean mayResend(String owner, Throwable error) {
    return PeerClientPool.refusedUnsent(error) || ownerGone(owner);
  }

  /**
   * Counts in {@link #droppedHits} and logs {@code items} GLOBAL items that a non-owner sent this
   * node, as their former owner, and that this node failed to hand on to {@code owner} with {@code
   * error}, which may have applied them.
   */
  public void droppedHandOn(int items, String owner, Throwable error) {
    dropped.addAndGet(items);
    warnings.warn(
        "hand-on drop " + owner,
        "dropping the GLOBAL hits of {} keys: handing them on to {} failed and it may have applied"
            + " them: {}",
        items,
        owner,
        error.getMessage());
  }

  private Object stripe(String key) {
    return stripes[key.hashCode() & (stripes.length - 1)];
  }

  /** Queues the hits of a GLOBAL {@code request} this node does not own, for its owner. */
  public void queueHits(RateLimitRequest request) {
    if (enqueue(request, 0)) {
      flushHits();
    }
  }

  // Queues request's hits, sent times before; returns whether the queue is full, to be flushed now.
  private boolean enqueue(RateLimitRequest request, int sent) {
    if (request.hits() == 0 && !request.has(Behavior.RESET_REMAINING)) {
      return false;
    }
    boolean flushNow;
    synchronized (lock) {
      if (held.containsKey(request.hashKey())) {
        held.merge(request.hashKey(), Queued.of(request, sent), Queued::then);
        return false;
      }
      hits.merge(request.hashKey(), Queued.of(request, sent), Queued::then);
      flushNow = hits.size() >= batchLimit;
      if (!flushNow && hitsTimer == null) {
        hitsTimer = scheduler.schedule(this::flushHits, syncWait);
      }
    }
    return flushNow;
  }

  /** Queues a broadcast of the key of a GLOBAL {@code request} this node owns and just applied. */
  public void queueBroadcast(RateLimitRequest request) {
    if (request.hits() == 0 && !request.has(Behavior.RESET_REMAINING)) {
      return;
    }
    boolean flushNow;
    synchronized (lock) {
      broadcasts.put(request.hashKey(), request);
      flushNow = broadcasts.size() >= batchLimit;
      if (!flushNow && broadcastTimer == null) {
        broadcastTimer = scheduler.schedule(this::flushBroadcasts, syncWait);
      }
    }
    if (flushNow) {
      flushBroadcasts();
    }
  }

  /**
   * Sends the queued hits to their owners now, except those held back behind a call still out;
   * completes when the calls out at that moment (this flush's and earlier ones) and the calls
   * carrying the hits then held back have ended, answered or failed. Hits queued later, also those
   * that join hits held back, are not waited for beyond that one call. With the ring empty (this
   * node left and every other member is down) the hits have no owner and are dropped.
   */
  public CompletableFuture<Void> flushHits() {
    CompletableFuture<Void> sent = tracked(sendQueued());
    List<CompletableFuture<Void>> all;
    synchronized (lock) {
      all = new ArrayList<>(flushesOut);
      all.addAll(heldSent.values());
    }
    all.add(sent);
    return CompletableFuture.allOf(all.toArray(CompletableFuture<?>[]::new));
  }

  // Counts send among the sends out until it completes; returns it.
  private CompletableFuture<Void> tracked(CompletableFuture<Void> send) {
    if (!send.isDone()) {
      synchronized (lock) {
        flushesOut.add(send);
      }
      send.whenComplete(
          (v, e) -> {
            synchronized (lock) {
              flushesOut.remove(send);
            }
          });
    }
    return send;
  }

  /**
   * Sends the queued hits that may go now; completes when their calls ended (not the sends their
   * ends let out).
   */
  private CompletableFuture<Void> sendQueued() {
    List<Item> out = new ArrayList<>();
    List<CompletableFuture<Void>> carried = new ArrayList<>();
    synchronized (lock) {
      cancel(hitsTimer);
      hitsTimer = null;
      hits.forEach((key, q) -> take(key, q, out, carried));
      hits = new LinkedHashMap<>();
    }
    CompletableFuture<Void> sent;
    try {
      sent = out.isEmpty() ? CompletableFuture.completedFuture(null) : send(out);
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    sent.whenComplete((v, e) -> carried.forEach(c -> c.complete(null)));
    return sent;
  }

  /**
   * Under lock: adds the item of key to send now to out, counting it out, or holds q back. The
   * future of the key's held items, when it has one and they go now, is added to carried.
   */
  private void take(String key, Queued q, List<Item> out, List<CompletableFuture<Void>> carried) {
    if (resetsOut.containsKey(key) || (q.reset() != null && itemsOut.containsKey(key))) {
      held.merge(key, q, Queued::then);
      heldSent.computeIfAbsent(key, k -> new CompletableFuture<>());
      return;
    }
    itemsOut.merge(key, 1, Integer::sum);
    if (q.reset() == null) {
      out.add(new Item(q.hits(), q.hitsSends()));
      Optional.ofNullable(heldSent.remove(key)).ifPresent(carried::add);
      return;
    }
    out.add(new Item(q.reset(), q.resetSends()));
    resetsOut.merge(key, 1, Integer::sum);
    if (q.hits() != null) {
      held.put(key, new Queued(null, 0, q.hits(), q.hitsSends()));
      heldSent.computeIfAbsent(key, k -> new CompletableFuture<>());
    } else {
      Optional.ofNullable(heldSent.remove(key)).ifPresent(carried::add);
    }
  }

  /**
   * Sends {@code items} (at most one per key) to their owners on the current ring in calls of at
   * most {@value RateLimitService#MAX_BATCH_SIZE} items; those this node owns are queued for
   * broadcast. Completes when every call ended.
   */
  private CompletableFuture<Void> send(List<Item> items) {
    long start = clock.monotonicNanos();
    Map<String, List<Item>> byOwner = new LinkedHashMap<>();
    try {
      HashRing current = ring.get();
      if (current.isEmpty()) {
        dropped.addAndGet(items.size());
        return ended(items, null, null);
      }
      for (Item i : items) {
        byOwner
            .computeIfAbsent(current.ownerOf(i.request().hashKey()), o -> new ArrayList<>())
            .add(i);
      }
    } catch (RuntimeException e) {
      return ended(items, null, null).thenCompose(v -> CompletableFuture.failedFuture(e));
    }
    List<Call> calls = new ArrayList<>();
    List<CompletableFuture<Void>> after = new ArrayList<>();
    byOwner.forEach(
        (owner, mine) -> {
          if (owner.equals(self)) {
            after.add(broadcastHere(mine));
            return;
          }
          for (List<Item> chunk : chunks(mine)) {
            List<RateLimitRequest> requests =
                chunk.stream().map(i -> queuedHere(i.request())).toList();
            CompletableFuture<List<RateLimitResponse>> call =
                peers.call(
                    owner, c -> c.getPeerRateLimits(requests, timeout, "sending global hits to"));
            calls.add(new Call(owner, call));
            after.add(
                call.handle(
                        (answers, e) -> {
                          if (answers != null) {
                            countRefused(chunk, answers, owner);
                          }
                          return e;
                        })
                    .thenCompose(e -> ended(chunk, e, owner)));
          }
        });
    after.add(timed(calls, start, true));
    return CompletableFuture.allOf(after.toArray(CompletableFuture<?>[]::new));
  }

  /**
   * Counts in {@link #droppedHits} and logs the {@code items} that {@code owner} answered with an
   * error in {@code answers}: it did not apply their hits, and sending them again would be refused
   * again.
   */
  private void countRefused(List<Item> items, List<RateLimitResponse> answers, String owner) {
    int refused = 0;
    String first = null;
    String why = null;
    for (int i = 0; i < Math.min(items.size(), answers.size()); i++) {
      RateLimitResponse answer = answers.get(i);
      if (answer != null && answer.isError()) {
        refused++;
        if (first == null) {
          first = items.get(i).request().hashKey();
          why = answer.error();
        }
      }
    }
    if (refused > 0) {
      dropped.addAndGet(refused);
      warnings.warn(
          "refused by " + owner,
          "dropping the GLOBAL hits of {} keys: {} refused them, the hits of {} with: {}",
          refused,
          owner,
          first,
          why);
    }
  }

  /**
   * Returns the queued {@code request} as it is sent to its owner: marked {@link
   * PeerProtos#QUEUED_BY} this node, whose copy holds its hits.
   */
  private RateLimitRequest queuedHere(RateLimitRequest request) {
    if (request.metadata().isEmpty()) {
      return request.withMetadata(queuedBySelf);
    }
    Map<String, String> metadata = new LinkedHashMap<>(request.metadata());
    metadata.put(PeerProtos.QUEUED_BY, self);
    return request.withMetadata(metadata);
  }

  // Queues items, whose keys this node has come to own, for broadcast; then ends them.
  private CompletableFuture<Void> broadcastHere(List<Item> items) {
    try {
      items.forEach(i -> queueBroadcast(i.request()));
    } catch (RuntimeException e) {
      return ended(items, null, null).thenCompose(v -> CompletableFuture.failedFuture(e));
    }
    return ended(items, null, null);
  }

  /**
   * Counts {@code items} no longer out. When their call to {@code owner} failed with {@code error},
   * they are queued again (for the next sync, to the owner of then) if that owner will not apply
   * them late: the call was refused before it was sent, or the owner is no longer on the ring;
   * otherwise, or after {@value #MAX_SENDS} sends, they are dropped. The hits held back behind
   * {@code items} that may go now are sent at once by a {@linkplain #sendReleased send of their
   * own}, unless some were queued again (then they wait for the sync). Completes at once.
   */
  private CompletableFuture<Void> ended(List<Item> items, Throwable error, String owner) {
    boolean again = error != null && (PeerClientPool.refusedUnsent(error) || ownerGone(owner));
    boolean released = false;
    List<String> releasedKeys = new ArrayList<>();
    List<CompletableFuture<Void>> unsent = new ArrayList<>();
    int requeued = 0;
    synchronized (lock) {
      for (Item i : items) {
        String key = i.request().hashKey();
        itemsOut.computeIfPresent(key, (k, n) -> n == 1 ? null : n - 1);
        if (i.request().has(Behavior.RESET_REMAINING)) {
          resetsOut.computeIfPresent(key, (k, n) -> n == 1 ? null : n - 1);
        }
        if (again && i.sends() + 1 < MAX_SENDS) {
          Map<String, Queued> into = held.containsKey(key) ? held : hits;
          into.merge(key, Queued.of(i.request(), i.sends() + 1), (later, back) -> back.then(later));
          requeued++;
        }
      }
      for (Item i : items) {
        String key = i.request().hashKey();
        Queued q = held.get(key);
        if (q != null
            && !resetsOut.containsKey(key)
            && (q.reset() == null || !itemsOut.containsKey(key))) {
          held.remove(key);
          hits.merge(key, q, (later, earlier) -> earlier.then(later));
          releasedKeys.add(key);
          released = true;
        }
      }
      if (requeued > 0) {
        releasedKeys.stream().map(heldSent::remove).filter(u -> u != null).forEach(unsent::add);
      }
      if (requeued > 0 && hitsTimer == null) {
        try {
          hitsTimer = scheduler.schedule(this::flushHits, syncWait);
        } catch (RuntimeException e) {
          LOG.warn("GLOBAL hits queued again wait for the next hit's sync: {}", e.getMessage());
        }
      }
    }
    if (error != null && requeued < items.size()) {
      dropped.addAndGet(items.size() - requeued);
      warnings.warn(
          again ? "drop after sends" : "drop maybe applied",
          "dropping the GLOBAL hits of {} keys: {}",
          items.size() - requeued,
          again ? "sent " + MAX_SENDS + " times" : "the owner may have applied them");
    }
    unsent.forEach(u -> u.complete(null));
    if (released && requeued == 0) {
      sendReleased();
    }
    return CompletableFuture.completedFuture(null);
  }

  /**
   * Sends the queued hits on the scheduler, at once, or on this thread when the scheduler refuses:
   * a send of its own, which later flushes wait for, so that no flush waits for the hits its calls'
   * ends let out beyond those it held back, and no call's completion thread builds the send.
   */
  private void sendReleased() {
    Runnable release = () -> tracked(sendQueued());
    try {
      scheduler.schedule(release, Duration.ZERO);
    } catch (RuntimeException e) {
      release.run();
    }
  }

  // Whether owner is off the current ring, so that it will not apply hits late.
  private boolean ownerGone(String owner) {
    try {
      return !ring.get().peers().contains(owner);
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * Sends the queued broadcasts of the keys this node still owns to every other peer now; completes
   * when every peer answered or failed. A key owned elsewhere by now is not broadcast: its copy here
   * is no longer the authoritative state, and its new owner broadcasts its own.
   */
  public CompletableFuture<Void> flushBroadcasts() {
    List<RateLimitRequest> out;
    synchronized (lock) {
      out = new ArrayList<>(broadcasts.values());
      broadcasts = new LinkedHashMap<>();
      cancel(broadcastTimer);
      broadcastTimer = null;
    }
    if (out.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    long start = clock.monotonicNanos();
    long now = clock.wallMillis();
    HashRing current = ring.get();
    List<UpdatePeerGlobal> updates = new ArrayList<>(out.size());
    for (RateLimitRequest r : out) {
      if (current.isEmpty() || !current.ownerOf(r.hashKey()).equals(self)) {
        continue;
      }
      RateLimitRequest query =
          r.withHits(0)
              .withBehavior(r.behavior() & ~(Behavior.RESET_REMAINING | Behavior.DRAIN_OVER_LIMIT));
      RateLimitResponse status = local.decide(query);
      UpdatePeerGlobal.Builder u =
          UpdatePeerGlobal.newBuilder()
              .setKey(r.hashKey())
              .setStatus(PeerProtos.toProto(status))
              .setAlgorithmValue(r.algorithm())
              .setDuration(r.duration())
              .setCreatedAt(now);
      store.get(r.hashKey()).ifPresent(s -> u.setWeirState(PeerProtos.toSnapshot(r.hashKey(), s)));
      updates.add(u.build());
    }
    if (updates.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    List<Call> calls = new ArrayList<>();
    for (String peer : current.peers()) {
      if (!peer.equals(self)) {
        for (List<UpdatePeerGlobal> chunk : chunks(updates)) {
          calls.add(new Call(peer, peers.call(peer, c -> c.updatePeerGlobals(chunk, timeout))));
        }
      }
    }
    return timed(calls, start, false);
  }

  /**
   * Overwrites this node's copies with the owner's broadcast {@code globals}, except keys this node
   * owns on the current ring: their bucket here is the authoritative one. The hits still queued for
   * a key overwritten here are applied to its new copy.
   */
  public void apply(List<UpdatePeerGlobal> globals) {
    long now = clock.wallMillis();
    HashRing current = ring.get();
    for (UpdatePeerGlobal g : globals) {
      if (!current.isEmpty() && current.ownerOf(g.getKey()).equals(self)) {
        continue;
      }
      Optional<BucketState> exact =
          g.hasWeirState() ? PeerProtos.fromSnapshot(g.getWeirState()) : Optional.empty();
      Optional<BucketState> state = exact.isPresent() ? exact : rebuild(g, now);
      if (state.isPresent()) {
        synchronized (stripe(g.getKey())) {
          copyWrites.writing(g.getKey(), true);
          store.put(g.getKey(), state.get());
          reapplyQueued(g.getKey());
        }
      }
    }
  }

  // Applies the hits queued for key to its copy, which a broadcast has just replaced.
  private void reapplyQueued(String key) {
    Queued q;
    synchronized (lock) {
      q = hits.containsKey(key) ? hits.get(key) : held.get(key);
    }
    if (q == null) {
      return;
    }
    for (RateLimitRequest r : new RateLimitRequest[] {q.reset(), q.hits()}) {
      if (r != null) {
        local.decide(r.withBehavior(r.behavior() | Behavior.DRAIN_OVER_LIMIT));
      }
    }
  }

  /** Sends the queued hits and broadcasts now; completes when every call answered or failed. */
  public CompletableFuture<Void> flush() {
    return CompletableFuture.allOf(flushHits(), flushBroadcasts());
  }

  /** Sends what is queued. */
  @Override
  public void close() {
    flush();
  }

  // Gubernator's receiver: token copies status, limit, remaining; leaky sets burst = limit. Expiry
  // follows the engine's convention: a bucket lives until reset_time + 1.
  private static Optional<BucketState> rebuild(UpdatePeerGlobal g, long now) {
    RateLimitResp s = g.getStatus();
    if (g.getAlgorithm() == Algorithm.TOKEN_BUCKET) {
      return Optional.of(
          new TokenBucketState(
              PeerProtos.statusOf(s.getStatusValue()),
              s.getLimit(),
              g.getDuration(),
              s.getRemaining(),
              g.getCreatedAt(),
              RateLimitEngine.tokenBucketExpireAt(s.getResetTime())));
    }
    if (g.getAlgorithm() == Algorithm.LEAKY_BUCKET) {
      return Optional.of(
          new LeakyBucketState(
              s.getLimit(),
              g.getDuration(),
              s.getLimit(),
              s.getRemaining(),
              now,
              SaturatingMath.add(s.getResetTime(), 1)));
    }
    return Optional.empty();
  }

  /**
   * Completes when every call did, logging failures (at most one per peer and kind of call per
   * {@link RateLimitedLogger#DEFAULT_INTERVAL}), and reports the time since {@code start} as a
   * hit send or a broadcast, failed when any call failed (a call refused before it left this node,
   * with no peer called, too); reports nothing when there were no calls.
   */
  private CompletableFuture<Void> timed(List<Call> calls, long start, boolean hitSend) {
    if (calls.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<?>[] all =
        calls.stream().map(Call::future).toArray(CompletableFuture<?>[]::new);
    CompletableFuture<?>[] settled =
        calls.stream().map(c -> logged(c, hitSend)).toArray(CompletableFuture<?>[]::new);
    return CompletableFuture.allOf(settled)
        .thenRun(
            () -> {
              long nanos = clock.monotonicNanos() - start;
              boolean ok = !CompletableFuture.allOf(all).isCompletedExceptionally();
              if (hitSend) {
                metrics.globalSend(nanos, ok);
              } else {
                metrics.globalBroadcast(nanos, ok);
              }
            });
  }

  private CompletableFuture<?> logged(Call call, boolean hitSend) {
    String kind = (hitSend ? "send " : "broadcast ") + call.peer();
    return call.future()
        .handle(
            (r, e) -> {
              if (e != null) {
                warnings.warn(kind, "{}", e.getMessage());
              }
              return null;
            });
  }

  /** A call to {@code peer}. */
  private record Call(String peer, CompletableFuture<?> future) {}

  /**
   * Splits {@code items} into calls a peer accepts: at most {@value
   * RateLimitService#MAX_BATCH_SIZE}.
   */
  private static <T> List<List<T>> chunks(List<T> items) {
    List<List<T>> out = new ArrayList<>();
    for (int from = 0; from < items.size(); from += RateLimitService.MAX_BATCH_SIZE) {
      out.add(items.subList(from, Math.min(items.size(), from + RateLimitService.MAX_BATCH_SIZE)));
    }
    return out;
  }

  /**
   * The hits of one key waiting for its owner: the last RESET_REMAINING request (null when none was
   * queued) and the sum of the hits queued after it (null when none), each with how many times it
   * was sent before.
   */
  private record Queued(
      RateLimitRequest reset, int resetSends, RateLimitRequest hits, int hitsSends) {

    static Queued of(RateLimitRequest r) {
      return of(r, 0);
    }

    static Queued of(RateLimitRequest r, int sends) {
      return r.has(Behavior.RESET_REMAINING)
          ? new Queued(r, sends, null, 0)
          : new Queued(null, 0, r, sends);
    }

    // A reset replaces what was queued; later hits add to the sum after the last reset, which keeps
    // the rest of its first request (limit, duration, algorithm, flags, metadata) whole, as
    // Gubernator does: a later item's flags on the first one's duration can make a request the
    // owner refuses, losing every hit of the sum. A sum has the fewer sends of its parts, so that
    // hits never sent keep all theirs.
    Queued then(Queued next) {
      if (next.reset != null) {
        return next;
      }
      if (hits == null) {
        return new Queued(reset, resetSends, next.hits, next.hitsSends);
      }
      return new Queued(
          reset,
          resetSends,
          hits.withHits(SaturatingMath.add(hits.hits(), next.hits.hits())),
          Math.min(hitsSends, next.hitsSends));
    }
  }

  /** One key's reset or summed hits as sent, and how many times they were sent before. */
  private record Item(RateLimitRequest request, int sends) {}

  private static void cancel(Scheduler.Task task) {
    if (task != null) {
      task.cancel();
    }
  }
}
