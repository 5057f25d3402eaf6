package dev.weir.core.cluster.handoff;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.cluster.ring.StandInKeys;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends buckets to their new owner when ownership changes, so counts survive membership changes.
 *
 * <p>Design: after a ring change, every live bucket this node owned on the old ring and does not own on
 * the new one is sent with {@code TransferBuckets} to its new owner (up to 1000 per call); once the
 * owner acknowledged it, a bucket that took hits meanwhile (requests routed on the old ring) is
 * sent again, as it is now, up to {@link #MAX_ROUNDS} times in all, unless it was written as a
 * GLOBAL copy meanwhile ({@link #writingCopy}): this node answered from it as a non-owner, and
 * those hits reach the owner through the GLOBAL sync, or it took the owner's broadcast, which the
 * owner has already counted; sending it again would count them twice. The buckets sent stay here
 * until they expire or are evicted, so a key that comes back finds its count; items a peer still
 * forwards here for a key that moved (its ring is behind) are handed on to the new owner ({@link
 * HandOn}), not counted on the copy kept here. Shutdown is the ring change that
 * removes this node, so every bucket it owns goes to its next owner. Copies of GLOBAL buckets this
 * node does not own are never sent: their owner has the authoritative state.
 *
 * <p>Before an announced change (this node leaving, or a peer returning) the buckets that will move
 * are first {@link #copy copied} to their next owner while this node keeps them and keeps
 * answering, so the next owner has the counts when peers start routing to it; the transfer after
 * the ring change sends them again in full, and the receiver counts only what changed since the
 * copy. The receiver remembers, per key, the last snapshot it merged and its sender (for {@link
 * #LINEAGE_TTL}, at most {@link #LINEAGE_LIMIT} keys; forgotten once a transfer's send of the key
 * from this node ends, acknowledged or not, so also when the transfer gives up and keeps the bucket
 * here: a failed send may have been merged all the same, and the owner's next snapshot would bring
 * this node's own hits back; forgotten too once the lineage's sender acknowledged a {@link
 * #handOver}, {@link #handBack} or {@link #copyOver} of the key, which a failed one, or one to
 * another node, leaves as it is; a late, less consumed snapshot never replaces it): a later
 * snapshot of the same bucket from the same sender adds only the hits recorded since ({@link
 * BucketMerge#addConsumedSince}), so hits taken on both sides while the change spreads all count; a
 * first snapshot is merged with {@link BucketMerge#moreConsumed}, and so is one whose key's copy
 * here the owner's GLOBAL broadcast has replaced since the last (the hits since are already in it).
 * Expired buckets are dropped.
 */
public final class HandOff {

  private static final Logger LOG = LoggerFactory.getLogger(HandOff.class);
  private static final int CHUNK = 1000;

  /** How many times one bucket is sent when the old owner keeps recording hits on it meanwhile. */
  static final int MAX_ROUNDS = 3;

  /**
   * How long the receiver remembers the last snapshot it merged per key: long enough for one
   * announced change (copy, notice, transfer and its resend rounds, each waiting seconds at most),
   * short enough that a later, unrelated hand-off of the key does not start from an old base.
   */
  public static final Duration LINEAGE_TTL = Duration.ofSeconds(30);

  /** How many keys' last snapshots the receiver remembers at most. */
  public static final long LINEAGE_LIMIT = 100_000;

  private final String self;
  private final BucketStore store;
  private final PeerClientPool peers;
  private final Clock clock;
  private final Duration timeout;
  private final Executor scans;
  private final TransferRetry retry;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong received = new AtomicLong();
  private final Cache<String, Lineage> lineage;
  // The keys of buckets being transferred, each with its watch, shared by overlapping transfers.
  private final ConcurrentHashMap<String, Watch> transferring = new ConcurrentHashMap<>();
  // The restored keys held for their owners (restore until forgetRestored), each with its watch.
  private final ConcurrentHashMap<String, Restored> restored = new ConcurrentHashMap<>();
  private CompletableFuture<Void> pending = CompletableFuture.completedFuture(null);
  private volatile boolean closed;

  /**
   * Creates the hand-off of {@code self}'s buckets in {@code store}; each call has {@code timeout}.
   * A ring change's store scan runs on the thread that reports the change.
   */
  public HandOff(
      String self, BucketStore store, PeerClientPool peers, Clock clock, Duration timeout) {
    this(self, store, peers, clock, timeout, Runnable::run);
  }

  /**
   * Creates the hand-off of {@code self}'s buckets in {@code store}; each call has {@code timeout},
   * and a ring change's store scan runs on {@code scans}, so that a change reported on a transport
   * thread (a peer call's failure) does not hold it for the scan.
   */
  public HandOff(
      String self,
      BucketStore store,
      PeerClientPool peers,
      Clock clock,
      Duration timeout,
      Executor scans) {
    this(self, store, peers, clock, timeout, scans, TransferRetry.NONE);
  }

  /**
   * Creates the hand-off of {@code self}'s buckets in {@code store}; each call has {@code timeout},
   * a ring change's store scan runs on {@code scans}, and a ring change's transfer that fails is
   * sent again as {@code retry} says, until {@link #close()}.
   */
  public HandOff(
      String self,
      BucketStore store,
      PeerClientPool peers,
      Clock clock,
      Duration timeout,
      Executor scans,
      TransferRetry retry) {
    this.self = self;
    this.store = store;
    this.peers = peers;
    this.clock = clock;
    this.timeout = timeout;
    this.scans = scans;
    this.retry = retry;
    this.lineage =
        Caffeine.newBuilder()
            .ticker(clock::monotonicNanos)
            .expireAfterWrite(LINEAGE_TTL)
            .maximumSize(LINEAGE_LIMIT)
            .build();
  }

  /**
   * Sends the buckets that moved away from this node between {@code before} and {@code after}: on a
   * ring change, and on shutdown, where {@code after} is the ring without this node. The hand-off
   * joins {@link #pending()} before the store is scanned, and the scan holds no lock.
   */
  public CompletableFuture<Void> ringChanged(HashRing before, HashRing after) {
    if (!before.contains(self) || after.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> sending = new CompletableFuture<>();
    synchronized (this) {
      pending = CompletableFuture.allOf(pending, sending);
    }
    Runnable scan =
        () -> {
          try {
            send(before, after).whenComplete((ok, error) -> sending.complete(null));
          } catch (Throwable e) {
            sending.complete(null);
            LOG.warn("hand-off after a ring change failed before sending", e);
            if (e instanceof Error error) {
              throw error;
            }
          }
        };
    try {
      scans.execute(scan);
    } catch (RejectedExecutionException closed) {
      sending.complete(null);
    }
    return sending;
  }

  /**
   * Notes that the bucket of {@code key} is about to be written as the copy of a GLOBAL bucket this
   * node does not own: a transfer in flight does not send it again, and a {@linkplain #restore
   * restored} key held for its owner is sent as it was last sent; when the write is the owner's
   * broadcast ({@code ownersState}), which already holds the hits a sender's later snapshot would
   * add, the next snapshot of it received is merged as a first one.
   */
  public void writingCopy(String key, boolean ownersState) {
    if (!transferring.isEmpty()) {
      Watch watch = transferring.get(key);
      if (watch != null) {
        watch.copied = true;
      }
    }
    if (!restored.isEmpty()) {
      Restored held = restored.get(key);
      if (held != null) {
        held.copied = true;
      }
    }
    if (ownersState && lineage.estimatedSize() != 0) {
      lineage.invalidate(key);
    }
  }

  /** Returns how many keys have a transfer in flight (none once every hand-off has finished). */
  public int keysInTransfer() {
    return transferring.size();
  }

  /** Returns a future that completes when every hand-off started so far has finished. */
  public synchronized CompletableFuture<Void> pending() {
    return pending;
  }

  /**
   * Copies to their owner on {@code after} the live buckets this node owns on {@code before} and
   * will not own on {@code after}, keeping them here; completes when every copy was acknowledged or
   * failed.
   */
  public CompletableFuture<Void> copy(HashRing before, HashRing after) {
    if (!before.contains(self) || after.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    return inChunks(moving(before, after, false), this::copyChunk);
  }

  private CompletableFuture<Void> copyChunk(String owner, List<Handed> chunk) {
    return peers
        .transferBuckets(owner, snapshots(chunk), self, timeout)
        .handle(
            (accepted, error) -> {
              if (error != null) {
                LOG.warn(
                    "copy of {} buckets to {} failed: {}", chunk.size(), owner, error.getMessage());
              } else {
                LOG.info("copied {} buckets to {}", chunk.size(), owner);
              }
              return null;
            });
  }

  /**
   * Merges {@code buckets} sent by {@code from} into the store; returns how many live ones were
   * stored.
   */
  public int accept(List<BucketSnapshot> buckets, String from) {
    long now = clock.wallMillis();
    int stored = 0;
    for (BucketSnapshot b : buckets) {
      Optional<BucketState> state = PeerProtos.fromSnapshot(b);
      if (state.isEmpty() || state.get().expireAt() <= now) {
        continue;
      }
      BucketState incoming = state.get();
      store.update(
          b.getKey(),
          now,
          prior -> {
            Lineage known = lineage.getIfPresent(b.getKey());
            BucketState previous = known != null && known.sender.equals(from) ? known.state : null;
            BucketState merged =
                previous == null ? null : BucketMerge.addConsumedSince(prior, previous, incoming, now);
            lineage.put(
                b.getKey(),
                new Lineage(
                    from,
                    previous == null ? incoming : BucketMerge.moreConsumed(previous, incoming, now)));
            return new Decision(
                merged != null ? merged : BucketMerge.moreConsumed(prior, incoming, now), MERGED);
          });
      stored++;
    }
    received.addAndGet(stored);
    return stored;
  }

  /**
   * Merges {@code bucket}, restored from a snapshot file, into the store with the rule for a first
   * snapshot ({@link BucketMerge#moreConsumed}): several files may hold copies of one bucket (the
   * owner's and the copies hand-off left behind), and the most consumed is the latest. The key is
   * held for {@link #handOver} until {@link #forgetRestored}. Returns false, storing nothing, when
   * it carries no state or has expired.
   */
  public boolean restore(BucketSnapshot bucket) {
    long now = clock.wallMillis();
    Optional<BucketState> state = PeerProtos.fromSnapshot(bucket);
    if (state.isEmpty() || state.get().expireAt() <= now) {
      return false;
    }
    BucketState incoming = state.get();
    Restored held = restored.computeIfAbsent(bucket.getKey(), k -> new Restored());
    synchronized (held) {
      held.state = BucketMerge.moreConsumed(held.state, incoming, now);
    }
    store.update(
        bucket.getKey(),
        now,
        prior -> new Decision(BucketMerge.moreConsumed(prior, incoming, now), MERGED));
    return true;
  }

  /**
   * Stops holding the restored {@code keys} for {@link #handOver}: their owner acknowledged them,
   * they expired, they are owned here or they were not kept. Each counts in {@link #sentCount}
   * once, when it is forgotten and a {@link #handOver} sent while it was held was acknowledged,
   * whichever comes last, however many hand-overs of it were acknowledged.
   */
  public void forgetRestored(Collection<String> keys) {
    if (restored.isEmpty()) {
      return;
    }
    int acknowledged = 0;
    for (String key : keys) {
      Restored held = restored.remove(key);
      if (held != null) {
        acknowledged += held.released();
      }
    }
    sent.addAndGet(acknowledged);
  }

  /** Returns how many restored keys are held for {@link #handOver}. */
  public int restoredHeld() {
    return restored.size();
  }

  /**
   * Sends the live buckets of {@code keys} whose owner on {@code ring} is another node to that
   * owner with {@code TransferBuckets}, as they are now, keeping them here; completes with the
   * keys whose transfer failed (empty when every owner acknowledged). A {@linkplain #restore
   * restored} key whose bucket was written as a GLOBAL copy since it was restored is sent as it was
   * last sent (as restored, before its first send), as a ring change's resend does: the copy holds
   * the owner's broadcast, or hits this node answered as a non-owner that reach the owner through
   * the GLOBAL sync, and the owner would count them again. A key no longer held restored when it
   * is read is not sent: a late retry of a key released meanwhile would send its copy as it is now,
   * which may hold the owner's broadcast since the acknowledged send, and the owner would add its
   * own hits since that send again. Each restored key counts in {@link #sentCount} once it is
   * {@linkplain #forgetRestored forgotten} and a hand-over of it was acknowledged (hand-overs of one
   * key may overlap).
   */
  public CompletableFuture<Set<String>> handOver(Collection<String> keys, HashRing ring) {
    return sendNow(keys, ring, Counted.RESTORED);
  }

  /**
   * Sends {@code keys} as {@link #handOver} does, also those not held restored, counting each
   * acknowledged key in {@link #sentCount} (a restored one as {@link #handOver} counts it): the
   * buckets this node counted for an owner it failed to hand them on to, handed back to it.
   */
  public CompletableFuture<Set<String>> handBack(Collection<String> keys, HashRing ring) {
    return sendNow(keys, ring, Counted.EVERY);
  }

  /**
   * Sends {@code keys} as {@link #handOver} does (those held restored), counting none of them in
   * {@link #sentCount}, even once forgotten: a copy to a peer that is not on this node's ring yet, while each key stays held
   * for its owner on it, whose acknowledgement counts.
   */
  public CompletableFuture<Set<String>> copyOver(Collection<String> keys, HashRing ring) {
    return sendNow(keys, ring, Counted.NONE);
  }

  /** Which keys a send sends, and which acknowledged ones count in {@link #sentCount}. */
  private enum Counted {
    /** Restored keys held when read, none counted: a copy. */
    NONE,
    /** Restored keys held when read, each counted once it is also forgotten. */
    RESTORED,
    /** Every key, each counted, a restored one as {@link #RESTORED} counts it. */
    EVERY
  }

  // Sends keys to their owners on ring, counting those acknowledged in sent as counted says; once
  // a chunk is acknowledged, the lineage its owner had sent of its keys when they were read is
  // dropped.
  private CompletableFuture<Set<String>> sendNow(
      Collection<String> keys, HashRing ring, Counted counted) {
    List<Handed> read = new ArrayList<>(keys.size());
    Map<String, Restored> heldAtSend = new HashMap<>();
    Map<String, Lineage> lineageAtSend = new HashMap<>();
    for (String key : keys) {
      // the state, then the watch: a copy write marks the watch, then writes
      BucketState now = store.get(key).orElse(null);
      Restored held = restored.get(key);
      if (held == null && counted != Counted.EVERY) {
        continue;
      }
      Lineage known = lineage.getIfPresent(key);
      if (known != null) {
        lineageAtSend.put(key, known);
      }
      if (held != null) {
        heldAtSend.put(key, held);
        synchronized (held) {
          if (held.copied) {
            now = held.state;
          } else if (now != null) {
            held.state = now;
          }
        }
      }
      read.add(new Handed(key, now, null));
    }
    Map<String, List<Handed>> byOwner = new HashMap<>();
    byOwner(read, ring, clock.wallMillis(), byOwner);
    Set<String> failed = ConcurrentHashMap.newKeySet();
    return inChunks(
            byOwner,
            (owner, chunk) ->
                peers
                    .transferBuckets(owner, snapshots(chunk), self, timeout)
                    .handle(
                        (accepted, error) -> {
                          if (error != null) {
                            chunk.forEach(h -> failed.add(h.key));
                            return null;
                          }
                          forgetLineageFrom(owner, chunk, lineageAtSend);
                          if (counted != Counted.NONE) {
                            sent.addAndGet(acknowledged(chunk, heldAtSend, counted));
                          }
                          return null;
                        }))
        .thenApply(done -> Set.copyOf(failed));
  }

  // Drops the lineage of each key of chunk that owner had sent here when the key was read
  // (atSend): owner acknowledged this node's state of it, and its next snapshot of the key would
  // bring this node's hits back. A failed send keeps it (were it merged all the same, the owner's
  // next snapshot counts this node's hits twice, the safe side), and so do a send to another node,
  // whose hits since are not in owner's, and a newer lineage merged since the read (the owner may
  // have sent it before merging this send: kept, the safe side again). A kept lineage is not
  // written again, so it still expires LINEAGE_TTL after its snapshot was merged.
  private void forgetLineageFrom(String owner, List<Handed> chunk, Map<String, Lineage> atSend) {
    for (Handed h : chunk) {
      Lineage known = atSend.get(h.key);
      if (known != null && known.sender.equals(owner)) {
        lineage.asMap().remove(h.key, known);
      }
    }
  }

  // Returns how many of chunk, acknowledged by their owner, count as sent now: each restored key
  // (in heldAtSend) forgotten before, and with EVERY each key not held restored when sent.
  private static int acknowledged(
      List<Handed> chunk, Map<String, Restored> heldAtSend, Counted counted) {
    int count = 0;
    for (Handed h : chunk) {
      Restored held = heldAtSend.get(h.key);
      if (held != null) {
        count += held.acknowledged();
      } else if (counted == Counted.EVERY) {
        count++;
      }
    }
    return count;
  }

  // Adds each of handed whose state is live at now to byOwner, under its owner on ring, unless
  // that is this node (or the ring is empty); returns the others.
  private List<Handed> byOwner(
      List<Handed> handed, HashRing ring, long now, Map<String, List<Handed>> byOwner) {
    List<Handed> left = new ArrayList<>();
    for (Handed h : handed) {
      String owner = ring.isEmpty() ? self : ring.ownerOf(h.key);
      if (h.state == null || h.state.expireAt() <= now || owner.equals(self)) {
        left.add(h);
      } else {
        byOwner.computeIfAbsent(owner, o -> new ArrayList<>()).add(h);
      }
    }
    return left;
  }

  /**
   * Returns how many buckets this node has handed to others and had acknowledged: a ring change's
   * bucket once, on its last acknowledged send, a restored bucket once, when it is {@linkplain
   * #forgetRestored forgotten} and a {@link #handOver} or {@link #handBack} of it was acknowledged,
   * and another bucket at each acknowledged {@link #handBack}; {@link #copy} and {@link #copyOver}
   * count nothing.
   */
  public long sentCount() {
    return sent.get();
  }

  /** Returns how many buckets this node has received and stored. */
  public long receivedCount() {
    return received.get();
  }

  // Sends to each bucket's owner on the current ring when it is known, which is to or a later ring
  // (a scan that waited for an earlier one): a later change does not send what this node did not
  // own before it.
  private CompletableFuture<Void> send(HashRing from, HashRing to) {
    HashRing target = retry.ring() == null ? to : retry.ring().get();
    Map<String, List<Handed>> byOwner = moving(from, target.isEmpty() ? to : target, true);
    try {
      return inChunks(byOwner, (owner, chunk) -> transfer(owner, chunk, 0, 1, retry.first()));
    } catch (RuntimeException | Error e) {
      byOwner.values().forEach(handed -> handed.forEach(this::unwatch));
      throw e;
    }
  }

  // Calls call once per owner and chunk of at most CHUNK buckets.
  private CompletableFuture<Void> inChunks(
      Map<String, List<Handed>> byOwner,
      BiFunction<String, List<Handed>, CompletableFuture<Void>> call) {
    List<CompletableFuture<Void>> calls = new ArrayList<>();
    byOwner
        .forEach(
            (owner, handed) -> {
              for (int i = 0; i < handed.size(); i += CHUNK) {
                calls.add(call.apply(owner, handed.subList(i, Math.min(handed.size(), i + CHUNK))));
              }
            });
    return CompletableFuture.allOf(calls.toArray(new CompletableFuture<?>[0]));
  }

  private static List<BucketSnapshot> snapshots(List<Handed> chunk) {
    return chunk.stream().map(h -> PeerProtos.toSnapshot(h.key, h.state)).toList();
  }

  // The live buckets this node owns on from and does not own on to, by their owner on to; stand-in
  // buckets are this node's own, whoever owns their key. With watch, each key is watched before its
  // state is read, so that a GLOBAL copy write the read missed marks the watch.
  private Map<String, List<Handed>> moving(HashRing from, HashRing to, boolean watch) {
    Map<String, List<Handed>> byOwner = new HashMap<>();
    long now = clock.wallMillis();
    store.forEach(
        (key, scanned) -> {
          if (scanned.expireAt() <= now
              || StandInKeys.isStandIn(key)
              || !self.equals(from.ownerOf(key))) {
            return;
          }
          String owner = to.ownerOf(key);
          if (owner.equals(self)) {
            return;
          }
          if (!watch) {
            byOwner
                .computeIfAbsent(owner, o -> new ArrayList<>())
                .add(new Handed(key, scanned, null));
            return;
          }
          Watch w =
              transferring.compute(
                  key,
                  (k, known) -> {
                    Watch out = known == null ? new Watch() : known;
                    out.holders++;
                    return out;
                  });
          Optional<BucketState> read = store.get(key);
          Handed handed = new Handed(key, read.orElse(null), w);
          if (read.isEmpty()) {
            unwatch(handed);
            return;
          }
          byOwner.computeIfAbsent(owner, o -> new ArrayList<>()).add(handed);
        });
    return byOwner;
  }

  // Once a send ends, acknowledged or not (a failed one may have been merged, its answer lost),
  // the lineage of its keys is dropped: the owner may hold this node's hits since the snapshot
  // the lineage names, and would send them back in its next snapshot of the key.
  // After the ack, a bucket unchanged since its snapshot, or written as a GLOBAL copy since the
  // transfer began, is done and other changed ones go again (the ack reads the state, then the
  // watch; a copy write marks the watch, then writes). A bucket handed on stays here until it
  // expires or is evicted (HandOn passes later forwards on).
  // A failed send is sent again later (resendLater); attempt counts the sends that failed before
  // this one plus one, and wait is how long to wait if this one fails.
  private CompletableFuture<Void> transfer(
      String owner, List<Handed> chunk, int round, int attempt, Duration wait) {
    List<BucketSnapshot> snapshots = snapshots(chunk);
    return peers
        .transferBuckets(owner, snapshots, self, timeout)
        .handle(
            (accepted, error) -> {
              chunk.forEach(h -> lineage.invalidate(h.key));
              if (error != null) {
                LOG.warn(
                    "hand-off of {} buckets to {} failed (send {} of {}): {}",
                    chunk.size(),
                    owner,
                    attempt,
                    retry.attempts(),
                    error.getMessage());
                resendLater(chunk, attempt, wait);
                return CompletableFuture.<Void>completedFuture(null);
              }
              List<Handed> changed = new ArrayList<>();
              int read = 0;
              try {
                for (Handed h : chunk) {
                  Optional<BucketState> now = store.get(h.key);
                  read++;
                  if (now.isPresent() && !now.get().equals(h.state) && !h.watch.copied) {
                    changed.add(h.now(now.get()));
                  } else {
                    unwatch(h);
                  }
                }
              } catch (RuntimeException e) {
                LOG.warn(
                    "reading {} buckets after their hand-off to {} failed; not sent again",
                    chunk.size(),
                    owner,
                    e);
                chunk.subList(read, chunk.size()).forEach(this::unwatch);
                changed.forEach(this::unwatch);
                sent.addAndGet(chunk.size());
                return CompletableFuture.<Void>completedFuture(null);
              }
              sent.addAndGet(chunk.size() - changed.size());
              LOG.info("handed {} buckets to {}", chunk.size() - changed.size(), owner);
              if (changed.isEmpty()) {
                return CompletableFuture.<Void>completedFuture(null);
              }
              if (round + 1 >= MAX_ROUNDS) {
                LOG.warn(
                    "{} buckets kept changing during hand-off to {}; kept here",
                    changed.size(),
                    owner);
                changed.forEach(this::unwatch);
                sent.addAndGet(changed.size());
                return CompletableFuture.<Void>completedFuture(null);
              }
              return transfer(owner, changed, round + 1, attempt, wait);
            })
        .thenCompose(f -> f);
  }

  // Sends the buckets of a failed send again after wait, keeping their watches, unless this was the
  // last attempt or the hand-off is closed.
  private void resendLater(List<Handed> chunk, int attempt, Duration wait) {
    List<Handed> held = List.copyOf(chunk);
    if (attempt >= retry.attempts() || closed) {
      if (retry.attempts() > 1 && !closed) {
        LOG.warn(
            "{} buckets did not reach their new owners in {} sends; kept here",
            held.size(),
            attempt);
      }
      held.forEach(this::unwatch);
      return;
    }
    try {
      retry.scheduler().schedule(() -> resend(held, attempt + 1, retry.next(wait)), wait);
    } catch (RuntimeException e) {
      LOG.warn("could not schedule the resend of {} buckets: {}", held.size(), e.toString());
      held.forEach(this::unwatch);
    }
  }

  // Sends each bucket of held as it is now to its owner on the current ring; one written as a
  // GLOBAL copy since its transfer began is sent as it was first sent (no send of it reached the
  // owner; what the copy took since reaches the owner through the GLOBAL sync or came from it, and
  // the receiver keeps the more consumed state). One that has expired or is owned here again is
  // done.
  private void resend(List<Handed> held, int attempt, Duration wait) {
    if (closed) {
      held.forEach(this::unwatch);
      return;
    }
    Map<String, List<Handed>> byOwner = new HashMap<>();
    List<Handed> done;
    try {
      List<Handed> read = new ArrayList<>(held.size());
      for (Handed h : held) {
        // the state, then the watch: a copy write marks the watch, then writes
        BucketState now = store.get(h.key).orElse(null);
        read.add(h.now(h.watch.copied ? h.state : now));
      }
      done = byOwner(read, retry.ring().get(), clock.wallMillis(), byOwner);
    } catch (RuntimeException e) {
      LOG.warn("reading {} buckets to send them again failed; kept here", held.size(), e);
      held.forEach(this::unwatch);
      return;
    }
    done.forEach(this::unwatch);
    inChunks(byOwner, (owner, chunk) -> transfer(owner, chunk, 0, attempt, wait));
  }

  /**
   * Stops sending failed transfers again: a resend scheduled runs no more. Transfers under way
   * finish.
   */
  public void close() {
    closed = true;
  }

  // Ends one transfer's watch of the key: the last one to end removes it.
  private void unwatch(Handed h) {
    transferring.computeIfPresent(h.key, (k, w) -> --w.holders == 0 ? null : w);
  }

  /** A bucket sent and its state as sent; {@code watch} is null for a copy, which is sent once. */
  private record Handed(String key, BucketState state, Watch watch) {
    Handed now(BucketState current) {
      return new Handed(key, current, watch);
    }
  }

  /**
   * The watch of a key in transfer: whether its bucket was written as a GLOBAL copy since the first
   * transfer watching it began, and how many transfers watch it (changed under the map's lock).
   */
  private static final class Watch {
    volatile boolean copied;
    int holders;
  }

  /**
   * The watch of a restored key: whether its bucket was written as a GLOBAL copy since it was
   * restored, the state to send then (the one last sent, or as restored before the first send), and
   * whether it was forgotten and a {@link #handOver} of it acknowledged: it counts in {@link
   * #sentCount} once both happened, in either order.
   */
  private static final class Restored {
    volatile boolean copied;
    BucketState state;
    private boolean acknowledged;
    private boolean released;
    private boolean counted;

    /** Notes a hand-over of it acknowledged; returns 1 when it counts as sent now, else 0. */
    synchronized int acknowledged() {
      acknowledged = true;
      return countOnce();
    }

    /** Notes it forgotten; returns 1 when it counts as sent now, else 0. */
    synchronized int released() {
      released = true;
      return countOnce();
    }

    // Returns 1 the first time it is both acknowledged and released, else 0.
    private int countOnce() {
      if (acknowledged && released && !counted) {
        counted = true;
        return 1;
      }
      return 0;
    }
  }

  /** The last snapshot of a key merged here, and who sent it. */
  private record Lineage(String sender, BucketState state) {}

  private static final RateLimitResponse MERGED = RateLimitResponse.error("merged by hand-off");
}
