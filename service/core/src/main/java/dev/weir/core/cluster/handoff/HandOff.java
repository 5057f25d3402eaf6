package dev.weir.core.cluster.handoff;

import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.cluster.ring.HashRing;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.proto.gubernator.BucketSnapshot;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves buckets to their new owner when ownership changes, so counts survive membership changes.
 *
 * <p>Design: after a ring change, every live bucket this node owned on the old ring and does not own on
 * the new one is sent with {@code TransferBuckets} to its new owner (up to 1000 per call) and removed
 * here once the owner acknowledged it; a failed call keeps the buckets here. Shutdown is the ring
 * change that removes this node, so every bucket it owns goes to its next owner. The receiver merges each bucket with
 * {@link BucketMerge#moreConsumed}; expired buckets are dropped. Copies of GLOBAL buckets this node
 * does not own are never sent: their owner has the authoritative state.
 */
public final class HandOff {

  private static final Logger LOG = LoggerFactory.getLogger(HandOff.class);
  private static final int CHUNK = 1000;

  private final String self;
  private final BucketStore store;
  private final PeerClientPool peers;
  private final Clock clock;
  private final Duration timeout;
  private final AtomicInteger sent = new AtomicInteger();
  private final AtomicInteger received = new AtomicInteger();
  private CompletableFuture<Void> pending = CompletableFuture.completedFuture(null);

  /** Creates the hand-off of {@code self}'s buckets in {@code store}; each call has {@code timeout}. */
  public HandOff(
      String self, BucketStore store, PeerClientPool peers, Clock clock, Duration timeout) {
    this.self = self;
    this.store = store;
    this.peers = peers;
    this.clock = clock;
    this.timeout = timeout;
  }

  /**
   * Sends the buckets that moved away from this node between {@code before} and {@code after}: on a
   * ring change, and on shutdown, where {@code after} is the ring without this node.
   */
  public synchronized CompletableFuture<Void> ringChanged(HashRing before, HashRing after) {
    if (!before.contains(self) || after.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> sending = send(before, after);
    pending = CompletableFuture.allOf(pending, sending);
    return sending;
  }

  /** Returns a future that completes when every hand-off started so far has finished. */
  public synchronized CompletableFuture<Void> pending() {
    return pending;
  }

  /** Merges {@code buckets} into the store; returns how many live ones were stored. */
  public int accept(List<BucketSnapshot> buckets) {
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
          prior -> new Decision(BucketMerge.moreConsumed(prior, incoming), MERGED));
      stored++;
    }
    received.addAndGet(stored);
    return stored;
  }

  /** Returns how many buckets this node has handed to others and had acknowledged. */
  public int sentCount() {
    return sent.get();
  }

  /** Returns how many buckets this node has received and stored. */
  public int receivedCount() {
    return received.get();
  }

  private CompletableFuture<Void> send(HashRing from, HashRing to) {
    Map<String, List<BucketSnapshot>> byOwner = new HashMap<>();
    long now = clock.wallMillis();
    store.forEach(
        (key, state) -> {
          if (state.expireAt() <= now || !self.equals(from.ownerOf(key))) {
            return;
          }
          String owner = to.ownerOf(key);
          if (!owner.equals(self)) {
            byOwner.computeIfAbsent(owner, o -> new ArrayList<>()).add(PeerProtos.toSnapshot(key, state));
          }
        });
    List<CompletableFuture<Void>> calls = new ArrayList<>();
    byOwner.forEach(
        (owner, snapshots) -> {
          for (int i = 0; i < snapshots.size(); i += CHUNK) {
            List<BucketSnapshot> chunk = snapshots.subList(i, Math.min(snapshots.size(), i + CHUNK));
            calls.add(
                peers
                    .get(owner)
                    .transferBuckets(chunk, self, timeout)
                    .handle(
                        (accepted, error) -> {
                          if (error != null) {
                            LOG.warn("hand-off of {} buckets failed: {}", chunk.size(), error.getMessage());
                            return null;
                          }
                          chunk.forEach(s -> store.remove(s.getKey()));
                          sent.addAndGet(chunk.size());
                          LOG.info("handed {} buckets to {}", chunk.size(), owner);
                          return null;
                        }));
          }
        });
    return CompletableFuture.allOf(calls.toArray(new CompletableFuture<?>[0]));
  }

  private static final RateLimitResponse MERGED = RateLimitResponse.error("merged by hand-off");
}
