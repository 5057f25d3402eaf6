package dev.weir.client;

import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.ring.GetRingResp;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import io.grpc.ManagedChannel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * The members of a cluster's ring as a node last answered {@code weir.v1.Ring/GetRing}, each with a
 * channel and a batcher of its own, so that each check goes out in a call to the node that owns its
 * key and is answered there without a hop between nodes.
 *
 * <p>The owner of a check is the member the ring gives its {@code name + "_" + unique_key}, as the
 * nodes pick it ({@link HashRing}). A member that leaves the ring has its queued checks sent at
 * once and its channel shut down once their calls have started; a check that picked it just before
 * then fails on the shut-down channel before it is sent, and the client sends it through the
 * targets.
 */
final class OwnerRoutes {

  /** The ring and each member's batcher. */
  private record Route(HashRing ring, Map<String, CheckBatcher> batchers) {}

  /** A member's channel and the batcher that sends on it. */
  private record Member(ManagedChannel channel, CheckBatcher batcher) {}

  private final Function<String, ManagedChannel> open;
  private final BiFunction<String, ManagedChannel, CheckBatcher> batcherOn;
  private final Set<String> withoutChecks = ConcurrentHashMap.newKeySet();
  private final Map<String, Member> members = new HashMap<>();
  /** The batchers of members that left whose taken calls had not all started at the last look. */
  private final List<CheckBatcher> retired = new ArrayList<>();
  private volatile Route route;
  private boolean closed;
  /** The number of the ask whose ring is in use, or an older one's that answered the same. */
  private long appliedAsk = Long.MIN_VALUE;

  /**
   * Creates the routes, opening a member's channel with {@code open} (given its address) and its
   * batcher with {@code batcherOn} (given its address and channel) when the member first appears
   * on a ring.
   */
  OwnerRoutes(
      Function<String, ManagedChannel> open,
      BiFunction<String, ManagedChannel, CheckBatcher> batcherOn) {
    this.open = open;
    this.batcherOn = batcherOn;
  }

  /** Returns the hash key the ring places {@code request} by: {@code name + "_" + unique_key}. */
  static String hashKey(RateLimitReq request) {
    return request.getName() + "_" + request.getUniqueKey();
  }

  /**
   * Returns the batcher of the member that owns {@code request}'s key, or null before any ring and
   * when that member does not serve checks ({@link #sendThroughTargets}).
   */
  CheckBatcher batcherFor(RateLimitReq request) {
    Route now = route;
    if (now == null) {
      return null;
    }
    String owner = now.ring().ownerOf(hashKey(request));
    return withoutChecks.contains(owner) ? null : now.batchers().get(owner);
  }

  /**
   * Sends the checks {@code member} owns through the targets from now on, while it stays on the
   * ring: it answered that it does not serve checks (an embedded member without the V1 service).
   */
  void sendThroughTargets(String member) {
    withoutChecks.add(member);
  }

  /** Returns the members of the ring in use, sorted; empty before any ring. */
  List<String> members() {
    Route now = route;
    return now == null ? List.of() : now.ring().peers();
  }

  /**
   * Routes by the ring in {@code answer} to the {@code ask}th ask from now on, unless a ring
   * answered to a later ask is in use already: asks made together may be answered in any order,
   * and an older ring would send checks to members that left until the next ask.
   *
   * @throws IllegalArgumentException naming the field, its value and what is allowed, when {@code
   *     answer} is not a ring this client can use (the routes then stay as they were)
   */
  synchronized void apply(GetRingResp answer, long ask) {
    if (closed || ask < appliedAsk) {
      return;
    }
    if (answer.getMembersCount() == 0) {
      throw new IllegalArgumentException("members is empty; a ring has at least one member");
    }
    if (answer.getReplicas() < 1 || answer.getReplicas() > HashRing.MAX_REPLICAS) {
      throw new IllegalArgumentException(
          "replicas is " + answer.getReplicas() + "; allowed: 1 to " + HashRing.MAX_REPLICAS);
    }
    PeerHash hash = PeerHash.parse(answer.getHash());
    Set<String> addresses = new TreeSet<>(answer.getMembersList());
    Route before = route;
    if (before != null
        && before.ring().hash() == hash
        && before.ring().replicas() == answer.getReplicas()
        && before.ring().peers().equals(List.copyOf(addresses))) {
      appliedAsk = ask;
      return;
    }
    HashRing.checkPoints(addresses.size(), answer.getReplicas());
    HashRing ring = HashRing.of(addresses, answer.getReplicas(), hash);
    appliedAsk = ask;
    retired.removeIf(CheckBatcher::idle);
    Map<String, CheckBatcher> batchers = new HashMap<>();
    for (String address : addresses) {
      Member member =
          members.computeIfAbsent(
              address,
              a -> {
                ManagedChannel channel = open.apply(a);
                return new Member(channel, batcherOn.apply(a, channel));
              });
      batchers.put(address, member.batcher());
    }
    withoutChecks.retainAll(batchers.keySet());
    List<Member> gone = new ArrayList<>();
    members.entrySet().removeIf(e -> !batchers.containsKey(e.getKey()) && gone.add(e.getValue()));
    route = new Route(ring, Map.copyOf(batchers));
    for (Member member : gone) {
      member.batcher().close();
      shutDownWhenIdle(member);
      retired.add(member.batcher());
    }
  }

  /**
   * Sends every member's queued checks and shuts their channels down; later rings are ignored.
   *
   * @return the batchers of the members and of the members that left, whose calls being sent may
   *     not have started yet
   */
  synchronized List<CheckBatcher> close() {
    closed = true;
    route = null;
    List<CheckBatcher> batchers = new ArrayList<>();
    for (Member member : members.values()) {
      member.batcher().close();
      shutDownWhenIdle(member);
      batchers.add(member.batcher());
    }
    members.clear();
    batchers.addAll(retired);
    retired.clear();
    return batchers;
  }

  /** Shuts the member's channel down once its batcher's calls being sent have started. */
  private static void shutDownWhenIdle(Member member) {
    member.batcher().whenIdle(member.channel()::shutdown);
  }
}
