package dev.weir.core.cluster.handoff;

import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientSettings;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.InProcessPeers;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.List;

/** Peers, buckets and keys that the hand-off tests of this package share. */
final class HandOffFixtures {

  private HandOffFixtures() {}

  /** In-process peers on {@code clock} that send each item alone and time calls out after 5 s. */
  static InProcessPeers peers(FakeClock clock) {
    return new InProcessPeers(
        new PeerClientSettings(1000, Duration.ofMillis(1), Duration.ofSeconds(5), true), clock);
  }

  /** What a peer does with the buckets sent to it: returns how many it stored, or throws. */
  interface Acceptor {

    /** Takes {@code buckets} sent by {@code from}; returns how many it stored. */
    int accept(List<BucketSnapshot> buckets, String from);
  }

  /** A client on {@code peers} of {@code address}, whose transfers {@code acceptor} answers. */
  static PeerClient client(
      InProcessPeers peers, String address, Acceptor acceptor, FakeScheduler scheduler) {
    return peers.client(
        address,
        new IdlePeerHandler() {
          @Override
          public int acceptBuckets(List<BucketSnapshot> buckets, String from) {
            return acceptor.accept(buckets, from);
          }
        },
        scheduler);
  }

  /** An under-limit minute bucket of {@code limit} with {@code remaining} left, created at 1 s. */
  static TokenBucketState bucket(long limit, long remaining) {
    return new TokenBucketState(Status.UNDER_LIMIT, limit, 60_000, remaining, 1_000, 61_000);
  }

  /** The remaining hits of the token bucket {@code store} holds for {@code key}. */
  static long remaining(InMemoryBucketStore store, String key) {
    return ((TokenBucketState) store.get(key).orElseThrow()).remaining();
  }

  /** The first key {@code n_k0}, {@code n_k1}, ... that {@code ring} gives to {@code owner}. */
  static String keyOwnedBy(HashRing ring, String owner) {
    for (int i = 0; ; i++) {
      String key = "n_k" + i;
      if (ring.ownerOf(key).equals(owner)) {
        return key;
      }
    }
  }
}
